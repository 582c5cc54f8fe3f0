/** A value shown as text: strings as they are, anything else as indented JSON. */
export function JsonView({ value, label }: { value: unknown; label: string }) {
  const text = typeof value === "string" ? value : value === undefined ? "—" : JSON.stringify(value, null, 2);
  return (
    <pre className="json" data-label={label}>
      {text}
    </pre>
  );
}
