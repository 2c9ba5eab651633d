// Images in the Playground (issue 19 item 4, CON-10; issue 37 item 5): generate (size, n, quality,
// style, seed) or edit (upload up to the API's limits; edit-capable models only). Results are drawn
// at their own size (a 1024×1024 image is 1024 CSS pixels wide where the page has the room, the
// page's width where it has not), open in a lightbox, and are downloadable; every result is kept in
// this browser (./image-history.ts), so earlier images are still there after another call or a
// reload.
import { useCallback, useEffect, useState } from 'react';
import type { PricedModel } from '../api.ts';
import { type ImageOptions, images } from './calls.ts';
import { balanceNow, costOf } from './cost.ts';
import { ErrorBox } from './ErrorBox.tsx';
import { Choice, PromptBox, sizeAttributes } from './fields.tsx';
import { forgetImage, type KeptImage, keepImages, listImages } from './image-history.ts';
import { Lightbox, type LightboxImage } from './Lightbox.tsx';
import { type Cost, MediaCost } from './Metrics.tsx';

/** The API's edit limits (IMG-3): checked here too, so a person hears it before uploading. */
const MAX_FILES = 10;
const MAX_FILE_BYTES = 20 * 1024 * 1024;
const SIZES = ['256x256', '512x512', '1024x1024', '1536x1024', '1024x1536'];
/** OpenAI's qualities (gpt-image: low–high; DALL·E 3: standard, hd); "auto" sends none. */
const QUALITIES = ['auto', 'low', 'medium', 'high', 'standard', 'hd'];
const STYLES = ['model default', 'vivid', 'natural'];

const captionOf = (k: KeptImage) =>
  [k.model, k.size, ...Object.entries(k.options).map(([o, v]) => `${o} ${v}`), `“${k.prompt}”`].join(' · ');

const toLightbox = (list: KeptImage[]): LightboxImage[] =>
  list.map((k, i) => ({
    src: k.src,
    alt: `Made for “${k.prompt}”`,
    file: `image-${i + 1}.png`,
    caption: captionOf(k),
  }));

/** A result drawn at its own size; a click opens it in the lightbox. */
function Shown(props: { image: KeptImage; label: string; testId: string; onOpen: () => void }) {
  return (
    <button type="button" className="image-open" aria-label={props.label} onClick={props.onOpen}>
      <img
        src={props.image.src}
        alt={`Made for “${props.image.prompt}”`}
        data-testid={props.testId}
        {...sizeAttributes(props.image.size)}
      />
    </button>
  );
}

export function Images(props: {
  apiBase: string;
  secret: string | null;
  accountId: string;
  models: PricedModel[];
  currency: string | null;
}) {
  const imageModels = props.models.filter((m) => m.kind === 'image' && m.callable);
  const [model, setModel] = useState('');
  const [prompt, setPrompt] = useState('');
  const [size, setSize] = useState('1024x1024');
  const [n, setN] = useState(1);
  const [quality, setQuality] = useState('auto');
  const [style, setStyle] = useState(STYLES[0]!);
  const [seed, setSeed] = useState('');
  const [mode, setMode] = useState<'generate' | 'edit'>('generate');
  const [files, setFiles] = useState<File[]>([]);
  const [results, setResults] = useState<KeptImage[]>([]);
  const [history, setHistory] = useState<KeptImage[]>([]);
  const [open, setOpen] = useState<{ list: KeptImage[]; index: number } | null>(null);
  const [cost, setCost] = useState<Cost | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [fileError, setFileError] = useState('');
  const fitting = mode === 'edit' ? imageModels.filter((m) => m.capabilities.edit) : imageModels;
  const chosen = fitting.find((m) => m.id === model)?.id ?? fitting[0]?.id ?? '';

  useEffect(() => {
    listImages(props.accountId).then(setHistory, () => setHistory([]));
  }, [props.accountId]);

  const options = (): ImageOptions => ({
    ...(quality !== 'auto' ? { quality } : {}),
    ...(mode === 'generate' && style !== STYLES[0] ? { style } : {}),
    ...(mode === 'generate' && seed.trim() !== '' ? { seed: Number(seed) } : {}),
  });

  const go = async () => {
    if (!props.secret || !chosen || busy || !prompt.trim()) return;
    if (mode === 'edit' && files.length === 0) return setFileError('Choose at least one image to edit.');
    setBusy(true);
    setError(null);
    setResults([]);
    setCost(null);
    const before = await balanceNow().catch(() => null);
    try {
      const sent = options();
      const r = await images({
        apiBase: props.apiBase,
        secret: props.secret,
        model: chosen,
        prompt,
        size,
        n,
        options: sent,
        ...(mode === 'edit' ? { edit: files } : {}),
      });
      const createdAt = Date.now();
      const kept = r.map((image, i) => ({
        id: `${props.accountId}:${createdAt}:${i}`,
        accountId: props.accountId,
        createdAt,
        model: chosen,
        prompt,
        size,
        options: Object.fromEntries(Object.entries(sent).map(([k, v]) => [k, String(v)])),
        src: image.src,
      }));
      setResults(kept);
      // A full browser store loses the history, not the result on the page.
      keepImages(props.accountId, kept).then(setHistory, () => {});
      if (before !== null) setCost(await costOf(r[0]?.cost ?? null, before));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const closeLightbox = useCallback(() => setOpen(null), []);
  const moveLightbox = useCallback((index: number) => setOpen((o) => (o ? { ...o, index } : o)), []);
  const shownIds = new Set(results.map((r) => r.id));
  const earlier = history.filter((h) => !shownIds.has(h.id));

  return (
    <section aria-labelledby="images-heading">
      <h2 id="images-heading">Images</h2>
      <fieldset className="row">
        <legend className="visually-hidden">Generate or edit</legend>
        <label className="inline">
          <input
            type="radio"
            name="image-mode"
            checked={mode === 'generate'}
            onChange={() => setMode('generate')}
          />{' '}
          Generate
        </label>
        <label className="inline">
          <input type="radio" name="image-mode" checked={mode === 'edit'} onChange={() => setMode('edit')} />{' '}
          Edit
        </label>
      </fieldset>
      {/* The model on a line of its own: its id is not cut off (issue 37 item 3). */}
      <div className="media-model">
        <Choice label="Image model" value={chosen} options={fitting.map((m) => m.id)} onChange={setModel} />
      </div>
      <div className="grid-params">
        <Choice label="Size" value={size} options={SIZES} onChange={setSize} />
        <label>
          Images (n)
          <input
            type="number"
            min={1}
            max={10}
            value={n}
            onChange={(e) => setN(Math.min(10, Math.max(1, Math.round(Number(e.target.value)) || 1)))}
          />
        </label>
        <Choice label="Quality" value={quality} options={QUALITIES} onChange={setQuality} />
        {mode === 'generate' && <Choice label="Style" value={style} options={STYLES} onChange={setStyle} />}
        {mode === 'generate' && (
          <label>
            Seed (blank: random)
            <input
              type="number"
              min={0}
              max={2147483647}
              step={1}
              value={seed}
              onChange={(e) =>
                setSeed(
                  e.target.value === '' ? '' : String(Math.max(0, Math.round(Number(e.target.value)) || 0)),
                )
              }
            />
          </label>
        )}
      </div>
      {mode === 'edit' && (
        <label className="block">
          Images to edit (up to {MAX_FILES}, each at most 20 MB)
          <input
            type="file"
            accept="image/*"
            multiple
            onChange={(e) => {
              const picked = [...(e.target.files ?? [])];
              const big = picked.find((f) => f.size > MAX_FILE_BYTES);
              if (picked.length > MAX_FILES)
                setFileError(`At most ${MAX_FILES} images can be edited at once.`);
              else if (big) setFileError(`${big.name} is larger than 20 MB.`);
              else setFileError('');
              setFiles(picked.length > MAX_FILES || big ? [] : picked);
            }}
          />
        </label>
      )}
      <p className="error" role="alert">
        {fileError}
      </p>
      {fitting.length === 0 && (
        <p>
          {mode === 'edit' ? 'No model of the account can edit images.' : 'The account has no image model.'}
        </p>
      )}
      <PromptBox label="Image prompt" value={prompt} onChange={setPrompt} onRun={() => void go()} />
      <button
        type="button"
        className="primary"
        onClick={() => void go()}
        disabled={busy || !props.secret || !chosen}
      >
        {busy ? 'Working…' : mode === 'edit' ? 'Edit' : 'Generate'}
      </button>
      <ErrorBox error={error} />
      <MediaCost cost={cost} currency={props.currency} />
      <ul className="images natural" aria-label="Generated images">
        {results.map((r, i) => (
          <li key={r.id}>
            <Shown
              image={r}
              label={`Open image ${i + 1} at full size`}
              testId="result-image"
              onOpen={() => setOpen({ list: results, index: i })}
            />
            <a href={r.src} download={`image-${i + 1}.png`}>
              Download image {i + 1}
            </a>
          </li>
        ))}
      </ul>
      <h3>Earlier images</h3>
      {earlier.length === 0 ? (
        <p className="muted">None yet: the images made here are kept in this browser, the newest 24.</p>
      ) : (
        <ul className="images earlier" aria-label="Earlier images">
          {earlier.map((k, i) => (
            <li key={k.id} data-testid="earlier-image">
              <button
                type="button"
                className="image-open"
                aria-label={`Open earlier image ${i + 1} at full size`}
                onClick={() => setOpen({ list: earlier, index: i })}
              >
                <img src={k.src} alt={`Made for “${k.prompt}”`} />
              </button>
              <p className="small">{k.prompt}</p>
              <p className="muted small">
                {k.model} · {k.size} · {new Date(k.createdAt).toLocaleString()}
              </p>
              <button
                type="button"
                aria-label={`Remove earlier image ${i + 1}`}
                onClick={() => {
                  void forgetImage(k.id).then(() => setHistory((h) => h.filter((x) => x.id !== k.id)));
                }}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      {open && (
        <Lightbox
          images={toLightbox(open.list)}
          index={open.index}
          onIndex={moveLightbox}
          onClose={closeLightbox}
        />
      )}
    </section>
  );
}
