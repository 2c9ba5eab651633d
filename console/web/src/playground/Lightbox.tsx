// An image opened over the page at its own size, shrunk only to fit the window (issue 37 item 5):
// a modal dialog (focus kept inside, Esc closes, focus goes back to the thumbnail that opened it),
// the previous and next images by button or arrow key, the PNG's download, and what made it.
import { useEffect } from 'react';
import { Dialog } from '../Dialog.tsx';

export interface LightboxImage {
  src: string;
  alt: string;
  /** The file name its download gets. */
  file: string;
  /** One line saying what made it (model, size, prompt). */
  caption: string;
}

export function Lightbox(props: {
  images: LightboxImage[];
  index: number;
  onIndex: (i: number) => void;
  onClose: () => void;
}) {
  const { images, index, onIndex } = props;
  const image = images[index];
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'ArrowLeft' && index > 0) onIndex(index - 1);
      if (e.key === 'ArrowRight' && index < images.length - 1) onIndex(index + 1);
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [index, images.length, onIndex]);
  if (!image) return null;
  return (
    <Dialog title={`Image ${index + 1} of ${images.length}`} onClose={props.onClose} className="lightbox">
      <div className="row">
        <button type="button" onClick={props.onClose}>
          Close
        </button>
        <button type="button" disabled={index === 0} onClick={() => onIndex(index - 1)}>
          Previous
        </button>
        <button type="button" disabled={index === images.length - 1} onClick={() => onIndex(index + 1)}>
          Next
        </button>
        <a href={image.src} download={image.file}>
          Download
        </a>
      </div>
      <img src={image.src} alt={image.alt} data-testid="lightbox-image" />
      <p className="muted small">{image.caption}</p>
    </Dialog>
  );
}
