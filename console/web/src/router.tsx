// The app's pages by path, without a router library: the server answers index.html for each page
// path (console/app.ts PAGES), and links move with history.pushState.
import { type AnchorHTMLAttributes, useEffect, useState } from 'react';

const listeners = new Set<() => void>();

export function navigate(to: string): void {
  if (to === location.pathname + location.search) return;
  history.pushState(null, '', to);
  for (const l of listeners) l();
}

/** The current path and query string; re-renders on navigation and on Back/Forward. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((t) => t + 1);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** An in-app link: a real <a href> (open in a new tab works), moved with pushState on a plain click. */
export function Link({ href, onClick, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  return (
    <a
      {...rest}
      href={href}
      onClick={(e) => {
        onClick?.(e);
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    />
  );
}
