"""Writes a tiny Llama-architecture GGUF for llama.cpp's server in the tests: random weights (two
layers, 64 wide), a real byte-level BPE tokenizer (GPT-2's byte alphabet, merges learned here from a
short text) and a ChatML chat template with tool calls in Qwen 2.5's shape (<tool_call> tags, which
llama.cpp's --jinja recognises as the Hermes 2 Pro tool-call format). Nothing is downloaded.

The output layer is shaped so the model never ends its own answer and only writes printable ASCII:
the rows of the special tokens and of the non-printable bytes are zero while the others are large,
so those tokens' probability is below e^-40 at any temperature a test uses. Tests can then expect
exactly max_tokens tokens, as they do from the simulator, and text that is valid UTF-8 in every
frame. Deterministic (fixed seed), so the file is the same on every machine.

usage: write_tiny_gguf.py OUT.gguf
"""

import re
import sys

import gguf
import numpy as np

N_EMBD, N_HEAD, N_LAYER, N_FF, N_CTX = 64, 4, 2, 128, 4096
N_MERGES = 240
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

CORPUS = """
The quick brown fox jumps over the lazy dog. Hello, world! How are you today? I am fine, thank you.
Tell me something about the weather in Paris. It is sunny and warm, with a light wind from the west.
You are a helpful assistant. Answer the question in one short sentence, then stop.
The function get_weather takes a city and returns the temperature and the sky. Call it when asked.
{"name": "get_weather", "arguments": {"city": "Paris"}} <tool_call> </tool_call> <tools> </tools>
system user assistant tool function arguments name content role type object string properties
"""

CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    "{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call><|im_end|>\n"
    "{%- elif messages[0].role == 'system' %}"
    "<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) or "
    "(message.role == 'assistant' and not message.tool_calls) %}"
    "<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{%- elif message.role == 'assistant' %}<|im_start|>assistant"
    "{%- if message.content %}\n{{ message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    '\n<tool_call>\n{"name": "{{ tool_call.name }}", "arguments": '
    "{{ tool_call.arguments | tojson }}}\n</tool_call>"
    "{%- endfor %}<|im_end|>\n"
    "{%- elif message.role == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ message.content }}\n</tool_response><|im_end|>\n"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def byte_alphabet() -> list[str]:
    """GPT-2's map of the 256 bytes to printable characters (byte-level BPE's base vocabulary)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = {b: chr(b) for b in keep}
    n = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + n)
            n += 1
    return [chars[b] for b in range(256)]


def learn_merges(alphabet: list[str]) -> list[tuple[str, str]]:
    """Plain BPE over the corpus's words (GPT-2's pre-split, simplified): the N_MERGES most frequent pairs."""
    words: dict[tuple[str, ...], int] = {}
    for w in re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", CORPUS):
        key = tuple(alphabet[b] for b in w.encode())
        words[key] = words.get(key, 0) + 1
    merges: list[tuple[str, str]] = []
    while len(merges) < N_MERGES:
        pairs: dict[tuple[str, str], int] = {}
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + n
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        joined: dict[tuple[str, ...], int] = {}
        for w, n in words.items():
            out: list[str] = []
            i = 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            joined[tuple(out)] = joined.get(tuple(out), 0) + n
        words = joined
    return merges


def main(out: str) -> None:
    rng = np.random.default_rng(20)
    alphabet = byte_alphabet()
    merges = learn_merges(alphabet)
    tokens = alphabet + [a + b for a, b in merges] + SPECIALS
    types = [gguf.TokenType.NORMAL] * (len(tokens) - len(SPECIALS)) + [gguf.TokenType.CONTROL] * len(SPECIALS)
    n_vocab = len(tokens)
    unmap = {c: b for b, c in enumerate(alphabet)}
    printable = [
        i < len(tokens) - len(SPECIALS) and all(0x20 <= unmap[c] <= 0x7E for c in t) for i, t in enumerate(tokens)
    ]

    w = gguf.GGUFWriter(out, "llama")
    w.add_name("modelplane-tiny-test")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([f"{a} {b}" for a, b in merges])
    w.add_bos_token_id(tokens.index("<|endoftext|>"))
    w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    def rand(*shape: int, scale: float = 0.08) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    # numpy shapes are ggml's dimensions reversed: (rows, columns) = (out features, in features)
    w.add_tensor("token_embd.weight", rand(n_vocab, N_EMBD, scale=1.0))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    head = rand(n_vocab, N_EMBD, scale=2.0)
    head[~np.array(printable)] = 0.0
    w.add_tensor("output.weight", head)
    for i in range(N_LAYER):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{name}.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", rand(N_FF, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_up.weight", rand(N_FF, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_down.weight", rand(N_EMBD, N_FF))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1])
