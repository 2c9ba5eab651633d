# Drives the proxy with the official Python SDKs (openai, anthropic) and prints what they got as
# one JSON object on stdout; test/sdk/python.test.ts runs it and checks the answers.
import base64
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
vision, down = os.environ["MP_VISION"], os.environ["MP_DOWN"]
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

# The Responses API (issue 25): create, the stream helper, a function-tool round trip, a stored
# response continued and fetched, json_schema, and the SDK's error class.
rc = oa.responses.create(model=chat, input="Hello", max_output_tokens=8)
# Room to finish: the Python helper wants response.completed, and an answer cut by
# max_output_tokens ends with response.incomplete (as at OpenAI).
with oa.responses.stream(model=chat, input="Hi", max_output_tokens=200, store=False) as rs:
    deltas = "".join(e.delta for e in rs if e.type == "response.output_text.delta")
    rfinal = rs.get_final_response()
fn = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
call_r = oa.responses.create(model=chat, input="Please call get_weather", tools=[fn], store=False)
call = next(o for o in call_r.output if o.type == "function_call")
answer = oa.responses.create(model=chat, tools=[fn], store=False, max_output_tokens=16, input=[
    {"role": "user", "content": "Please call get_weather"},
    {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
    {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
follow = oa.responses.create(model=chat, input="And again?", previous_response_id=rc.id, max_output_tokens=8)
schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}
js = oa.responses.create(model=chat, input="Where?", store=False, max_output_tokens=64,
                         text={"format": {"type": "json_schema", "name": "place", "schema": schema, "strict": True}})
try:
    openai.OpenAI(base_url=f"{base}/v1", api_key="sk-service-wrong", max_retries=0).responses.create(model=chat, input="x")
    resp_auth = None
except openai.AuthenticationError as e:
    resp_auth = e.status_code
# An image input on a vision model.
pic = "data:image/png;base64," + base64.b64encode(png()).decode()
seen = oa.responses.create(model=vision, store=False, max_output_tokens=8, input=[{"role": "user", "content": [
    {"type": "input_text", "text": "What is in this image?"}, {"type": "input_image", "image_url": pic, "detail": "low"}]}])
# A stream the client leaves after three deltas (its own key, so its charge can be found): billed
# for what was generated, not the whole max_output_tokens.
cut = openai.OpenAI(base_url=f"{base}/v1", api_key=os.environ["MP_KEY_CUT"], max_retries=0)
cut_deltas = 0
with cut.responses.stream(model=chat, input="Tell me a very long story", max_output_tokens=256, store=False) as cs:
    for e in cs:
        if e.type == "response.output_text.delta":
            cut_deltas += 1
            if cut_deltas == 3:
                break


# The chat surface's error codes, each as the SDK's own error class.
def failure(client, **kw):
    try:
        client.responses.create(**{"model": chat, "input": "x", "max_output_tokens": 4, "store": False, **kw})
        return None
    except openai.APIStatusError as e:
        return {"class": type(e).__name__, "status": e.status_code, "code": e.code, "request_id": e.request_id}


as_key = lambda k: openai.OpenAI(base_url=f"{base}/v1", api_key=os.environ[k], max_retries=0)
errors = {
    "invalid_request": failure(oa, extra_body={"bogus": 1}),
    "invalid_api_key": failure(openai.OpenAI(base_url=f"{base}/v1", api_key="sk-service-wrong", max_retries=0)),
    "billing_currency_unset": failure(as_key("MP_KEY_NO_CURRENCY")),
    "model_not_found": failure(oa, model="No/Such-Model"),
    "insufficient_quota": failure(as_key("MP_KEY_BROKE")),
    "server_error": failure(oa, model=down),
}
out["responses"] = {
    "id": rc.id, "text": rc.output_text, "retrieved": oa.responses.retrieve(rc.id).output_text,
    "stream_deltas": deltas, "stream_final": rfinal.output_text, "call": call.name,
    "answer": answer.output_text, "follow_prev": follow.previous_response_id,
    "json": json.loads(js.output_text), "auth": resp_auth, "image": seen.output_text,
    "cut_deltas": cut_deltas, "errors": errors,
}

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
