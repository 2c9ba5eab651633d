// Country (ISO 3166-1 alpha-2) → billing currency (ISO 4217). An account without a country has no
// billing currency and is refused with 403 billing_currency_unset (SPEC "Authentication" 6).

const EUR = [
  'AT',
  'BE',
  'CY',
  'DE',
  'EE',
  'ES',
  'FI',
  'FR',
  'GR',
  'HR',
  'IE',
  'IT',
  'LT',
  'LU',
  'LV',
  'MT',
  'NL',
  'PT',
  'SI',
  'SK',
];

const table: Record<string, string> = {
  US: 'USD',
  GB: 'GBP',
  CA: 'CAD',
  AU: 'AUD',
  NZ: 'NZD',
  JP: 'JPY',
  CH: 'CHF',
  SE: 'SEK',
  NO: 'NOK',
  DK: 'DKK',
  PL: 'PLN',
  CZ: 'CZK',
  IN: 'INR',
  SG: 'SGD',
  BR: 'BRL',
  MX: 'MXN',
  KR: 'KRW',
  CN: 'CNY',
  ...Object.fromEntries(EUR.map((c) => [c, 'EUR'])),
};

export const supportedCountries = Object.keys(table).sort();
export const supportedCurrencies = [...new Set(Object.values(table))].sort();

export function currencyForCountry(country: string | null | undefined): string | null {
  if (!country) return null;
  return table[country.toUpperCase()] ?? null;
}

export function isSupportedCountry(country: string): boolean {
  return currencyForCountry(country) !== null;
}
