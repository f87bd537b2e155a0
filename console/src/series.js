// `/api/v1/status` lists its throughput buckets newest first, each with an ISO timestamp;
// uPlot wants columns, oldest first, with times in Unix seconds.

export function throughputColumns(points = []) {
  const sorted = [...points].sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp));
  return [
    sorted.map((p) => Date.parse(p.timestamp) / 1000),
    sorted.map((p) => p.ingestedPerSecond ?? 0),
    sorted.map((p) => p.processedPerSecond ?? 0),
  ];
}
