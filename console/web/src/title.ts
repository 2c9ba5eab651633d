import { useEffect } from 'react';

/** Every page has a title (the browser tab, and what a screen reader announces first). */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title;
  }, [title]);
}
