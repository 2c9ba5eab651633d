"""A tiny Llama for a real vLLM, made offline: no download from a model hub.

Writes config.json (2 layers, head size 64 — a size vLLM's CPU attention supports), a byte-level
BPE tokenizer trained here on a few lines of text (so any input tokenizes), the ChatML special
tokens, Hermes's <tool_call> tokens (vLLM's `hermes` tool parser refuses a tokenizer without
them) and a chat template that renders tools, tool calls and tool results. There are no weights:
vLLM starts it with `--load-format dummy` (random weights), so what it says is noise, but every
token, count, frame and cache block is the real engine's.

usage: python make-tiny-model.py OUT_DIR
"""

import json
import os
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

CORPUS = """
The quick brown fox jumps over the lazy dog. A model plane is an inference platform.
Hello, world! How are you today? Tell me a story about the weather in Paris and Berlin.
Use the get_weather tool for the city. The temperature is 21 degrees and the sky is clear.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000. JSON: {"city": "Paris", "unit": "celsius"}.
Write a long story about a word, a sentence and a paragraph, then say hi and goodbye.
""".strip().splitlines()

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>"]

CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nYou may call these tools:\n"
    "{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}\n"
    'Call one as <tool_call>{"name": ..., "arguments": {...}}</tool_call><|im_end|>\n'
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' and message.tool_calls %}<|im_start|>assistant\n"
    "{%- if message.content %}{{ message.content }}{% endif %}"
    "{%- for call in message.tool_calls %}\n<tool_call>{{ call.function | tojson }}</tool_call>{%- endfor %}"
    "<|im_end|>{{ '\\n' }}"
    "{%- else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>{{ '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 8, trainer=trainer)
    tok.add_tokens(ADDED)
    tok.save(os.path.join(out, "tokenizer.json"))
    vocab = tok.get_vocab_size(with_added_tokens=True)
    eos = tok.token_to_id("<|im_end|>")
    bos = tok.token_to_id("<|endoftext|>")

    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": None,
                "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>",
                "unk_token": None,
                "additional_special_tokens": ["<|im_start|>"],
                "model_max_length": 4096,
                "add_bos_token": False,
                "add_eos_token": False,
                "clean_up_tokenization_spaces": False,
                "chat_template": CHAT_TEMPLATE,
            },
            f,
            indent=2,
        )
    with open(os.path.join(out, "special_tokens_map.json"), "w") as f:
        json.dump({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, f, indent=2)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(
            {
                "architectures": ["LlamaForCausalLM"],
                "model_type": "llama",
                "hidden_size": 256,
                "intermediate_size": 512,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "head_dim": 64,
                "hidden_act": "silu",
                "max_position_embeddings": 4096,
                "rms_norm_eps": 1e-5,
                "rope_theta": 10000.0,
                "vocab_size": vocab,
                "bos_token_id": bos,
                "eos_token_id": eos,
                "pad_token_id": bos,
                "tie_word_embeddings": False,
                "torch_dtype": "float32",
            },
            f,
            indent=2,
        )
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": bos, "eos_token_id": eos}, f, indent=2)
    print(json.dumps({"dir": out, "vocab_size": vocab, "eos_token_id": eos}))


if __name__ == "__main__":
    main(sys.argv[1])
