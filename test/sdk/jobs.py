# The official Python SDKs over the calls that manage background work: a background response, an
# OpenAI batch and a Message Batch, each created, retrieved, listed and cancelled, and a cancel of an
# id that does not exist. openai-python sends `Content-Type: application/json` with an empty body on
# every body-less POST (the cancels), as OpenAI's reference curl does. Prints one JSON object.
import io
import json
import os

import anthropic
import openai

base, key, chat = os.environ["MP_BASE"], os.environ["MP_KEY"], os.environ["MP_CHAT"]
oa = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
an = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)
out = {}


def status_of(call):
    try:
        call()
        return 200
    except (openai.APIStatusError, anthropic.APIStatusError) as e:
        return {"status": e.status_code, "class": type(e).__name__}


r = oa.responses.create(model=chat, input="Tell me a long story", background=True, max_output_tokens=256)
retrieved = oa.responses.retrieve(r.id)
cancelled = oa.responses.cancel(r.id)
items = oa.responses.input_items.list(r.id)
out["responses"] = {
    "created": r.status,
    "retrieved": retrieved.id,
    "cancelled": cancelled.status,
    "input_items": len(items.data),
    "unknown_cancel": status_of(lambda: oa.responses.cancel("resp_" + "0" * 48)),
}

lines = "".join(
    json.dumps({
        "custom_id": f"line-{i}",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": chat, "messages": [{"role": "user", "content": "A long story"}], "max_tokens": 200},
    }) + "\n"
    for i in range(20)
).encode()
f = oa.files.create(file=("in.jsonl", io.BytesIO(lines), "application/jsonl"), purpose="batch")
b = oa.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
out["batches"] = {
    "retrieved": oa.batches.retrieve(b.id).id == b.id,
    "listed": b.id in [x.id for x in oa.batches.list().data],
    "cancelled": oa.batches.cancel(b.id).status,
    "unknown_cancel": status_of(lambda: oa.batches.cancel("batch_" + "0" * 32)),
}

mb = an.messages.batches.create(requests=[
    {"custom_id": f"m-{i}", "params": {"model": chat, "max_tokens": 200,
                                       "messages": [{"role": "user", "content": "A long story"}]}}
    for i in range(20)
])
out["message_batches"] = {
    "retrieved": an.messages.batches.retrieve(mb.id).id == mb.id,
    "listed": mb.id in [x.id for x in an.messages.batches.list().data],
    "cancelled": an.messages.batches.cancel(mb.id).processing_status,
    "unknown_cancel": status_of(lambda: an.messages.batches.cancel("msgbatch_" + "0" * 24)),
}
print(json.dumps(out))
