// Images and videos in the Playground (issue 19 item 4, CON-10). Images: generate (size, n) or edit
// (upload up to the API's limits; edit-capable models only); results shown in the page and
// downloadable. Videos: generate (prompt, seconds, size; an input image for image-to-video models);
// the charge shown at creation, the job's status and progress, then the MP4 plays in the page; the
// account's earlier jobs listed, a page at a time.
import { useCallback, useEffect, useState } from 'react';
import type { PricedModel } from '../api.ts';
import { money } from '../format.ts';
import {
  createVideo,
  getVideo,
  type ImageResult,
  images,
  listVideos,
  type VideoJob,
  videoLink,
} from './calls.ts';
import { balanceNow, costOf } from './cost.ts';
import { ErrorBox } from './ErrorBox.tsx';
import { Choice, PromptBox } from './fields.tsx';
import type { Cost } from './Metrics.tsx';

/** The API's edit limits (IMG-3): checked here too, so a person hears it before uploading. */
const MAX_FILES = 10;
const MAX_FILE_BYTES = 20 * 1024 * 1024;

function CostLine({ cost, currency }: { cost: Cost | null; currency: string | null }) {
  if (!cost) return null;
  return (
    <p data-testid="media-cost" data-cost={cost.amount} data-source={cost.source}>
      {cost.source === 'usage' ? 'Cost' : 'Cost (balance change)'}: {money(cost.amount, currency)}
    </p>
  );
}

export function Images(props: {
  apiBase: string;
  secret: string | null;
  models: PricedModel[];
  currency: string | null;
}) {
  const imageModels = props.models.filter((m) => m.kind === 'image' && m.callable);
  const [model, setModel] = useState('');
  const [prompt, setPrompt] = useState('');
  const [size, setSize] = useState('1024x1024');
  const [n, setN] = useState(1);
  const [mode, setMode] = useState<'generate' | 'edit'>('generate');
  const [files, setFiles] = useState<File[]>([]);
  const [results, setResults] = useState<ImageResult[]>([]);
  const [cost, setCost] = useState<Cost | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [fileError, setFileError] = useState('');
  const fitting = mode === 'edit' ? imageModels.filter((m) => m.capabilities.edit) : imageModels;
  const chosen = fitting.find((m) => m.id === model)?.id ?? fitting[0]?.id ?? '';

  const go = async () => {
    if (!props.secret || !chosen || busy || !prompt.trim()) return;
    if (mode === 'edit' && files.length === 0) return setFileError('Choose at least one image to edit.');
    setBusy(true);
    setError(null);
    setResults([]);
    setCost(null);
    const before = await balanceNow().catch(() => null);
    try {
      const r = await images({
        apiBase: props.apiBase,
        secret: props.secret,
        model: chosen,
        prompt,
        size,
        n,
        ...(mode === 'edit' ? { edit: files } : {}),
      });
      setResults(r);
      if (before !== null) setCost(await costOf(r[0]?.cost ?? null, before));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

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
      <div className="grid-params">
        <Choice label="Image model" value={chosen} options={fitting.map((m) => m.id)} onChange={setModel} />
        <Choice label="Size" value={size} options={['256x256', '512x512', '1024x1024']} onChange={setSize} />
        <label>
          Images (n)
          <input type="number" min={1} max={10} value={n} onChange={(e) => setN(Number(e.target.value))} />
        </label>
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
      <CostLine cost={cost} currency={props.currency} />
      <ul className="images" aria-label="Generated images">
        {results.map((r, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: the results of one call, in order
          <li key={i}>
            <img src={r.src} alt={`Result ${i + 1} for “${prompt}”`} data-testid="result-image" />
            <a href={r.src} download={`image-${i + 1}.png`}>
              Download image {i + 1}
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function Videos(props: {
  apiBase: string;
  secret: string | null;
  models: PricedModel[];
  currency: string | null;
}) {
  const videoModels = props.models.filter((m) => m.kind === 'video' && m.callable);
  const [model, setModel] = useState('');
  const [prompt, setPrompt] = useState('');
  const [seconds, setSeconds] = useState('4');
  const [size, setSize] = useState('1280x720');
  const [image, setImage] = useState<File | null>(null);
  const [job, setJob] = useState<VideoJob | null>(null);
  const [src, setSrc] = useState<string | null>(null);
  const [cost, setCost] = useState<Cost | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [earlier, setEarlier] = useState<{ data: VideoJob[]; hasMore: boolean; cursors: string[] }>({
    data: [],
    hasMore: false,
    cursors: [],
  });
  const chosen = videoModels.find((m) => m.id === model) ?? videoModels[0];

  const page = useCallback(
    async (cursors: string[]) => {
      if (!props.secret) return;
      try {
        const r = await listVideos(props.apiBase, props.secret, cursors.at(-1));
        setEarlier({ data: r.data, hasMore: r.has_more, cursors });
      } catch (err) {
        setError(err);
      }
    },
    [props.apiBase, props.secret],
  );
  useEffect(() => {
    void page([]);
  }, [page]);

  // Follow the job until it ends, then fetch the MP4's signed link for the player.
  useEffect(() => {
    if (!job || !props.secret || job.status === 'failed' || src) return;
    if (job.status === 'completed') {
      videoLink(props.apiBase, props.secret, job.id).then(setSrc, setError);
      void page([]);
      return;
    }
    const t = setTimeout(() => {
      getVideo(props.apiBase, props.secret!, job.id).then(setJob, setError);
    }, 1000);
    return () => clearTimeout(t);
  }, [job, props.apiBase, props.secret, src, page]);

  const go = async () => {
    if (!props.secret || !chosen || !prompt.trim()) return;
    setError(null);
    setJob(null);
    setSrc(null);
    setCost(null);
    const before = await balanceNow().catch(() => null);
    try {
      const created = await createVideo({
        apiBase: props.apiBase,
        secret: props.secret,
        model: chosen.id,
        prompt,
        seconds,
        size,
        ...(image && chosen.capabilities.imageToVideo ? { image } : {}),
      });
      setJob(created);
      // Video is charged when the job is created (BILL-4).
      if (before !== null) setCost(await costOf(created.usage?.cost ?? null, before));
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section aria-labelledby="videos-heading">
      <h2 id="videos-heading">Videos</h2>
      <div className="grid-params">
        <Choice
          label="Video model"
          value={chosen?.id ?? ''}
          options={videoModels.map((m) => m.id)}
          onChange={setModel}
        />
        <Choice label="Seconds" value={seconds} options={['4', '8', '12']} onChange={setSeconds} />
        <Choice label="Size" value={size} options={['1280x720', '720x1280']} onChange={setSize} />
      </div>
      {chosen?.capabilities.imageToVideo && (
        <label className="block">
          Input image (optional: the video starts from it)
          <input type="file" accept="image/*" onChange={(e) => setImage(e.target.files?.[0] ?? null)} />
        </label>
      )}
      {videoModels.length === 0 && <p>The account has no video model.</p>}
      <PromptBox label="Video prompt" value={prompt} onChange={setPrompt} onRun={() => void go()} />
      <button type="button" className="primary" onClick={() => void go()} disabled={!props.secret || !chosen}>
        Generate video
      </button>
      <ErrorBox error={error} />
      <CostLine cost={cost} currency={props.currency} />
      {job && (
        <p role="status" data-testid="video-status">
          {job.status === 'completed'
            ? 'Completed'
            : job.status === 'failed'
              ? `Failed: ${job.error?.message ?? 'the engine gave no reason'}`
              : `${job.status === 'queued' ? 'Queued' : 'In progress'}${job.progress !== undefined ? ` (${job.progress}%)` : ''}`}
        </p>
      )}
      {job && job.status !== 'completed' && job.status !== 'failed' && (
        <progress max={100} value={job.progress ?? 0} aria-label="Video progress" />
      )}
      {src && (
        <div>
          {/* biome-ignore lint/a11y/useMediaCaption: a generated video has no speech to caption */}
          <video src={src} controls data-testid="video" className="video" />
          <a href={src} download="video.mp4">
            Download the MP4
          </a>
        </div>
      )}
      <h3>Earlier videos</h3>
      <ul className="plain" aria-label="Earlier videos">
        {earlier.data.map((v) => (
          <li key={v.id}>
            <code>{v.id}</code> {v.model} — {v.status}
            {v.status === 'completed' && (
              <button
                type="button"
                onClick={() => {
                  setJob(v);
                  setSrc(null);
                }}
              >
                Play
              </button>
            )}
          </li>
        ))}
      </ul>
      <div className="row">
        {earlier.cursors.length > 0 && (
          <button type="button" onClick={() => void page(earlier.cursors.slice(0, -1))}>
            Newer
          </button>
        )}
        {earlier.hasMore && (
          <button type="button" onClick={() => void page([...earlier.cursors, earlier.data.at(-1)!.id])}>
            Older
          </button>
        )}
      </div>
    </section>
  );
}
