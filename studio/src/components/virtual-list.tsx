/** A list that renders only the rows in view (fixed row height): a 10,000-row list costs what 30 rows do. */
import { type ReactNode, useEffect, useRef, useState } from "react";

export function VirtualList<T>(props: {
  items: readonly T[];
  rowHeight: number;
  render: (item: T, index: number) => ReactNode;
  label: string;
  className?: string;
  /** Keep the view at the end while new rows arrive (a followed session). */
  stickToEnd?: boolean;
  /** A fixed height in pixels (default: the space its flex parent gives it). */
  height?: number;
}) {
  const { items, rowHeight, render, label, className, stickToEnd, height } = props;
  const ref = useRef<HTMLDivElement>(null);
  const [scroll, setScroll] = useState({ top: 0, height: 600 });
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const update = () => setScroll({ top: element.scrollTop, height: element.clientHeight || 600 });
    update();
    element.addEventListener("scroll", update, { passive: true });
    const observer = new ResizeObserver(update);
    observer.observe(element);
    return () => {
      element.removeEventListener("scroll", update);
      observer.disconnect();
    };
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: new rows (items.length) are what moves the view
  useEffect(() => {
    const element = ref.current;
    if (stickToEnd && element && element.scrollHeight - element.scrollTop - element.clientHeight < rowHeight * 3) element.scrollTop = element.scrollHeight;
  }, [items.length, stickToEnd, rowHeight]);
  const first = Math.max(0, Math.floor(scroll.top / rowHeight) - 5);
  const last = Math.min(items.length, Math.ceil((scroll.top + scroll.height) / rowHeight) + 5);
  const rows: ReactNode[] = [];
  for (let index = first; index < last; index++) {
    rows.push(
      <li key={index} className="vrow" style={{ top: index * rowHeight, height: rowHeight }}>
        {render(items[index], index)}
      </li>,
    );
  }
  return (
    <div ref={ref} className={`vlist ${className ?? ""}`} style={height !== undefined ? { height, flex: "none" } : undefined}>
      <ul className="vlist-inner" aria-label={label} style={{ height: items.length * rowHeight }}>
        {rows}
      </ul>
    </div>
  );
}
