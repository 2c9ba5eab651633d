import { Link } from '../router.tsx';
import { useTitle } from '../title.ts';

export function NotFound() {
  useTitle('Page not found');
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no such page. Go to <Link href="/api">API Management</Link>.
      </p>
    </>
  );
}
