// The account's catalogue view for the Playground, kept live: re-read every few seconds, so a
// model an admin applies (or access granted to an invite-only one) shows up without a reload.
import { useEffect, useState } from 'react';
import { api, type PricedModel } from '../api.ts';

export const CATALOGUE_REFRESH_MS = 3_000;

export function useCatalogue(): PricedModel[] | null {
  const [models, setModels] = useState<PricedModel[] | null>(null);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        const p = await api.pricing();
        if (live) setModels(p.models);
      } catch {
        // a failed refresh keeps what is shown; the next one tries again
      }
      if (live) timer = setTimeout(read, CATALOGUE_REFRESH_MS);
    };
    void read();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);
  return models;
}

export const textModels = (models: readonly PricedModel[]) =>
  models.filter((m) => m.kind === 'chat' && m.callable);
