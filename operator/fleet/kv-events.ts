// Where each ready engine publishes its KV-cache events, for the catalogue (core/catalogue
// endpointSchema.kvEvents): the ports its EndpointSlice names `kv-events` (vLLM's ZMQ PUB) and
// `kv-replay` (the ROUTER answering replays), on the endpoint's own address. The topic names the
// served model, as the engine was told to publish it (`kv@<served name>`).
import type { V1EndpointSlice } from '@kubernetes/client-node';

export interface KvEventsAddress {
  url: string;
  replayUrl?: string;
  topic: string;
}

export const kvEventsTopic = (servedName: string) => `kv@${servedName}`;

/** Endpoint base URL (as readyEndpoints spells it) → its events address, for slices that have one. */
export function kvEventAddresses(
  slices: readonly V1EndpointSlice[],
  servedName: string,
): Map<string, KvEventsAddress> {
  const out = new Map<string, KvEventsAddress>();
  for (const slice of slices) {
    const port = (name: string) => slice.ports?.find((p) => p.name === name)?.port;
    const http = port('http') ?? slice.ports?.[0]?.port;
    const events = port('kv-events');
    if (!http || !events) continue;
    const replay = port('kv-replay');
    for (const endpoint of slice.endpoints ?? []) {
      for (const address of endpoint.addresses) {
        const host = slice.addressType === 'IPv6' ? `[${address}]` : address;
        out.set(`http://${host}:${http}`, {
          url: `tcp://${host}:${events}`,
          ...(replay ? { replayUrl: `tcp://${host}:${replay}` } : {}),
          topic: kvEventsTopic(servedName),
        });
      }
    }
  }
  return out;
}
