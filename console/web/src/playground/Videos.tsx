// Videos in the Playground (issue 19 item 4, CON-10; issue 37 item 5): generate (prompt, seconds,
// size; an input image for image-to-video models); the charge shown at creation, the job's status
// and progress, then the MP4 plays in the page at the job's size (a 1280×720 job is 1280 CSS pixels
// wide where the page has the room: an engine may encode fewer pixels, the player scales them up);
// the account's earlier jobs a page at a time, each with its date, model, length, size and status,
// and the prompt this browser sent (the API does not return it: ./video-prompts.ts).
import { useCallback, useEffect, useState } from 'react';
import type { PricedModel } from '../api.ts';
import { createVideo, getVideo, listVideos, type VideoJob, videoLink } from './calls.ts';
import { balanceNow, costOf } from './cost.ts';
import { ErrorBox } from './ErrorBox.tsx';
import { Choice, PromptBox, sizeAttributes } from './fields.tsx';
import { type Cost, MediaCost } from './Metrics.tsx';
import { keepVideoPrompt, videoPrompts } from './video-prompts.ts';

const when = (seconds: number | undefined) => (seconds ? new Date(seconds * 1000).toLocaleString() : '');

const STATUS = { queued: 'Queued', in_progress: 'In progress', completed: 'Completed', failed: 'Failed' };

export function Videos(props: {
  apiBase: string;
  secret: string | null;
  accountId: string;
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
  const prompts = videoPrompts(localStorage, props.accountId);

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
      keepVideoPrompt(localStorage, props.accountId, created.id, prompt);
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
      <MediaCost cost={cost} currency={props.currency} />
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
          <video src={src} controls data-testid="video" className="video" {...sizeAttributes(job?.size)} />
          <a href={src} download="video.mp4">
            Download the MP4
          </a>
        </div>
      )}
      <h3>Earlier videos</h3>
      <ul className="plain earlier-videos" aria-label="Earlier videos">
        {earlier.data.map((v) => (
          <li key={v.id} data-testid="earlier-video">
            <div>
              <strong>{prompts[v.id] ?? 'Prompt not kept in this browser'}</strong>
              <p className="muted small">
                {when(v.created_at)} · {v.model} · {v.seconds} s · {v.size} ·{' '}
                <span data-testid="earlier-status">{STATUS[v.status]}</span> · <code>{v.id}</code>
              </p>
            </div>
            {v.status === 'completed' && (
              <button
                type="button"
                aria-label={`Play the video of ${when(v.created_at)}`}
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
