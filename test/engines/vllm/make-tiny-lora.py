"""A tiny LoRA adapter for the tiny Llama of make-tiny-model.py, made offline with the standard
library only (no torch, numpy or peft): PEFT's adapter_config.json and an adapter_model.safetensors
written by hand (8-byte little-endian header length, a JSON header, then the raw float32 tensors).

Rank 8 on q_proj and v_proj of both layers, sizes matching make-tiny-model.py (hidden 256, 4 heads
and 2 KV heads of 64). The values are small and deterministic; like the base's dummy weights they
mean nothing — the test is that vLLM loads it at runtime (/v1/load_lora_adapter) and serves it.
vLLM 0.32 loads it (adapters.e2e.ts).

usage: python make-tiny-lora.py OUT_DIR
"""

import json
import os
import struct
import sys

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, LAYERS, RANK = 256, 4, 2, 64, 2, 8
OUT = {"q_proj": HEADS * HEAD_DIM, "v_proj": KV_HEADS * HEAD_DIM}


def tensor(rows, cols, seed):
    # A small, fixed pattern: enough to be a real (non-zero) adapter, cheap to write.
    return struct.pack(f"<{rows * cols}f", *(((i * 31 + seed) % 17 - 8) / 800.0 for i in range(rows * cols)))


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    tensors = {}
    for layer in range(LAYERS):
        for seed, (module, out) in enumerate(OUT.items()):
            prefix = f"base_model.model.model.layers.{layer}.self_attn.{module}"
            tensors[f"{prefix}.lora_A.weight"] = ([RANK, HIDDEN], tensor(RANK, HIDDEN, layer * 4 + seed))
            tensors[f"{prefix}.lora_B.weight"] = ([out, RANK], tensor(out, RANK, layer * 4 + seed + 2))
    header, offset, blobs = {}, 0, []
    for name, (shape, data) in tensors.items():
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the format pads the header to 8 bytes with spaces
    with open(os.path.join(out_dir, "adapter_model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": RANK,
        "lora_alpha": 16,
        "lora_dropout": 0.0,
        "target_modules": list(OUT),
        "bias": "none",
        "fan_in_fan_out": False,
        "modules_to_save": None,
        "base_model_name_or_path": None,
    }
    with open(os.path.join(out_dir, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
