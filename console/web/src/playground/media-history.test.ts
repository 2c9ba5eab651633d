import { describe, expect, it } from 'vitest';
import { memoryStorage } from '../../../../test/helpers/memory-storage.ts';
import { beyondKeep, type KeptImage, newestFirst } from './image-history.ts';
import { keepVideoPrompt, videoPrompts } from './video-prompts.ts';

const image = (createdAt: number, i = 0): KeptImage => ({
  id: `acct:${createdAt}:${i}`,
  accountId: 'acct',
  createdAt,
  model: 'm',
  prompt: 'p',
  size: '1024x1024',
  options: {},
  src: 'data:image/png;base64,',
});

describe('the image history', () => {
  it('is newest first, a call’s images in their order', () => {
    const list = newestFirst([image(1), image(3, 0), image(2), image(3, 1)]);
    expect(list.map((k) => k.id)).toEqual(['acct:3:1', 'acct:3:0', 'acct:2:0', 'acct:1:0']);
  });

  it('drops the oldest beyond what it keeps', () => {
    const all = [1, 2, 3, 4, 5].map((t) => image(t));
    expect(beyondKeep(all, 3).map((k) => k.createdAt)).toEqual([2, 1]);
    expect(beyondKeep(all, 5)).toEqual([]);
  });
});

describe('the prompts of video jobs', () => {
  it('are kept per account, by job id', () => {
    const storage = memoryStorage();
    keepVideoPrompt(storage, 'a', 'video_1', 'a boat');
    keepVideoPrompt(storage, 'b', 'video_2', 'a fox');
    expect(videoPrompts(storage, 'a')).toEqual({ video_1: 'a boat' });
    expect(videoPrompts(storage, 'b')).toEqual({ video_2: 'a fox' });
  });

  it('keep the newest 200, and read as none when the stored value is not a map', () => {
    const storage = memoryStorage();
    for (let i = 0; i < 205; i++) keepVideoPrompt(storage, 'a', `video_${i}`, `prompt ${i}`);
    const kept = videoPrompts(storage, 'a');
    expect(Object.keys(kept)).toHaveLength(200);
    expect(kept.video_4).toBeUndefined();
    expect(kept.video_204).toBe('prompt 204');
    storage.setItem('modelplane.playground.videos.a', '[1,2]');
    expect(videoPrompts(storage, 'a')).toEqual({});
    storage.setItem('modelplane.playground.videos.a', '{not json');
    expect(videoPrompts(storage, 'a')).toEqual({});
  });

  it('a full store loses the prompt, not the call', () => {
    const storage = memoryStorage(10);
    expect(() => keepVideoPrompt(storage, 'a', 'video_1', 'a long prompt')).not.toThrow();
    expect(videoPrompts(storage, 'a')).toEqual({});
  });
});
