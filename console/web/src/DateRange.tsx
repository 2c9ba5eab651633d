// A From–To pair of date inputs (UTC days, YYYY-MM-DD), each bounded by the other: the usage page's
// range and the billing ledger's.
export function DateRange(props: {
  from: string;
  to: string;
  onFrom: (day: string) => void;
  onTo: (day: string) => void;
}) {
  return (
    <>
      <label className="inline">
        From
        <input type="date" value={props.from} max={props.to} onChange={(e) => props.onFrom(e.target.value)} />
      </label>
      <label className="inline">
        To
        <input type="date" value={props.to} min={props.from} onChange={(e) => props.onTo(e.target.value)} />
      </label>
    </>
  );
}
