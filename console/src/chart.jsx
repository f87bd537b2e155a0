// A uPlot line chart. uPlot draws on a canvas and owns its DOM, so the component only
// creates it, hands it new data, and follows the container's width.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useSession } from './session.js';

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

/**
 * `series`: `{ label, color }` (a CSS variable), with `spanGaps` to bridge `null`s (levels
 * sampled now and then) and `points` (uPlot's series points) to mark some values. `yFormat` writes the y axis' values (seconds as durations).
 */
export function LineChart({ columns, series, height = 220, yFormat }) {
  const { theme } = useSession();
  const box = useRef(null);
  const plot = useRef(null);
  // Made anew when the theme changes: uPlot reads its colours once.
  useEffect(() => {
    // The element, not the ref: Preact clears the ref before a late resize callback runs.
    const el = box.current;
    const axis = {
      stroke: css('--muted'),
      grid: { stroke: css('--grid') },
      ticks: { stroke: css('--grid') },
    };
    const opts = {
      width: el.clientWidth || 600,
      height,
      legend: { live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        axis,
        { ...axis, size: 60, ...(yFormat ? { values: (_u, ticks) => ticks.map(yFormat) } : {}) },
      ],
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: css(s.color),
          width: 2,
          fill: `${css(s.color)}22`,
          spanGaps: Boolean(s.spanGaps),
          ...(s.points ? { points: s.points } : {}),
        })),
      ],
    };
    plot.current = new uPlot(opts, columns, el);
    const resize = new ResizeObserver(() => {
      plot.current?.setSize({ width: el.clientWidth, height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current.destroy();
      plot.current = null;
    };
  }, [theme, height]);
  useEffect(() => {
    plot.current?.setData(columns);
  }, [columns]);
  return <div class="chart" ref={box} />;
}
