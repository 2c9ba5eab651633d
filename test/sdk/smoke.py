# Drives the proxy with the official Python SDKs (openai, anthropic) and prints what they got as
# one JSON object on stdout; test/sdk/python.test.ts runs it and checks the answers.
import io
import json
import os
import struct
import sys
import time
import zlib

import anthropic
import openai

base, key = os.environ["MP_BASE"], os.environ["MP_KEY"]
chat, image, video = os.environ["MP_CHAT"], os.environ["MP_IMAGE"], os.environ["MP_VIDEO"]
out = {}


def png(w=8, h=8):
    raw = b"".join(b"\x00" + bytes([40, 120, 200]) * w for _ in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


oa = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
r = oa.chat.completions.create(model=chat, messages=[{"role": "user", "content": "Hello"}], max_tokens=5)
out["chat"] = {"model": r.model, "text": r.choices[0].message.content}
streamed = "".join(c.choices[0].delta.content or "" for c in oa.chat.completions.create(
    model=chat, messages=[{"role": "user", "content": "Hi"}], max_tokens=5, stream=True) if c.choices)
out["chat_stream"] = streamed

img = oa.images.generate(model=image, prompt="a fox", n=2)
out["images"] = [d.url for d in img.data]
edit = oa.images.edit(model=image, prompt="night", response_format="b64_json",
                      image=[("a.png", io.BytesIO(png()), "image/png"), ("b.png", io.BytesIO(png()), "image/png")])
out["edit_png"] = edit.data[0].b64_json[:8]

v = oa.videos.create(model=video, prompt="a boat", seconds="4", input_reference=("start.png", io.BytesIO(png()), "image/png"))
out["video_created"] = v.status
deadline = time.time() + 20
while v.status in ("queued", "in_progress") and time.time() < deadline:
    time.sleep(0.1)
    v = oa.videos.retrieve(v.id)
out["video_status"] = v.status
content = oa.videos.download_content(v.id)
out["video_head"] = content.read()[4:8].decode("latin1")
out["videos_listed"] = len(list(oa.videos.list(limit=1)))

an = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)
m = an.messages.create(model=chat, max_tokens=8, messages=[{"role": "user", "content": "Hello"}])
out["message"] = {"id": m.id, "stop_reason": m.stop_reason, "output_tokens": m.usage.output_tokens, "text": m.content[0].text}
with an.messages.stream(model=chat, max_tokens=8, messages=[{"role": "user", "content": "Hi"}]) as s:
    text = "".join(s.text_stream)
    final = s.get_final_message()
out["message_stream"] = {"text": text, "final": final.content[0].text}
tool = {"name": "get_weather", "description": "Weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
t = an.messages.create(model=chat, max_tokens=64, tools=[tool], messages=[{"role": "user", "content": "Please call get_weather"}])
out["tool_use"] = [b.name for b in t.content if b.type == "tool_use"]
out["count_tokens"] = an.messages.count_tokens(model=chat, messages=[{"role": "user", "content": "Hello"}]).input_tokens
try:
    anthropic.Anthropic(base_url=base, api_key="sk-service-wrong", max_retries=0).messages.create(
        model=chat, max_tokens=8, messages=[{"role": "user", "content": "x"}])
except anthropic.AuthenticationError as e:
    out["auth_error"] = {"status": e.status_code, "request_id": e.request_id}

json.dump(out, sys.stdout)
