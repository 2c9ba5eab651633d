// The media URL policy as a table (docs/security.md "Media URLs"): what may reach an engine that
// downloads it, in the spellings an attacker would try. test/security/engine-requests.test.ts
// shows it end to end over both dialects.
import { describe, expect, it } from 'vitest';
import { mediaUrlProblem } from './media-urls.ts';

describe('mediaUrlProblem', () => {
  it.each([
    'https://images.example.com/cat.png',
    'https://8.8.8.8/cat.png',
    'https://[2606:4700:4700::1111]/cat.png',
    'https://cdn.example.org./a.png',
    'data:image/png;base64,iVBORw0KGgo=',
    'DATA:image/png;base64,AAAA',
  ])('lets %s through', (url) => {
    expect(mediaUrlProblem(url)).toBeNull();
  });

  it.each([
    ['http://images.example.com/cat.png', /https/],
    ['file:///etc/passwd', /https/],
    ['gopher://example.com/', /https/],
    ['not a url', /not a URL/],
    ['https://127.0.0.1/', /internal/],
    ['https://127.1/', /internal/],
    ['https://0x7f.0.0.1/', /internal/],
    ['https://2130706433/', /internal/],
    ['https://0.0.0.0/', /internal/],
    ['https://[::]/', /internal/],
    ['https://[::1]/', /internal/],
    ['https://[::ffff:127.0.0.1]/', /internal/],
    ['https://[::ffff:a9fe:a9fe]/', /internal/], // 169.254.169.254
    ['https://169.254.169.254/latest/meta-data/', /internal/],
    ['https://10.1.2.3/', /internal/],
    ['https://172.31.255.255/', /internal/],
    ['https://192.168.0.1/', /internal/],
    ['https://100.100.100.200/', /internal/], // Alibaba's metadata (carrier-grade NAT range)
    ['https://[fd00:ec2::254]/', /internal/],
    ['https://[fe80::1]/', /internal/],
    ['https://localhost/', /internal/],
    ['https://api.localhost/', /internal/],
    ['https://metadata.google.internal/', /internal/],
    ['https://printer.local/', /internal/],
    ['https://redis/', /internal/],
    ['https://kube-dns.kube-system.svc.cluster.local/', /internal/],
    ['https://LOCALHOST./', /internal/],
  ])('refuses %s', (url, why) => {
    expect(mediaUrlProblem(url)).toMatch(why);
  });
});
