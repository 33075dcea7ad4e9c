-- wrk reporter for nginx-sizing: after the run, print one JSON object on a line of its own,
-- prefixed with NGINX_SIZING_JSON. It carries the summary, every error counter, wrk's own
-- percentiles and the full latency histogram as [microseconds, count] pairs (wrk keeps one
-- bucket per microsecond, so histograms from several clients merge exactly by summing).

local function num(x)
  if x ~= x or x == math.huge or x == -math.huge then
    return "null"
  end
  return string.format("%.0f", x)
end

done = function(summary, latency, requests)
  local e = summary.errors
  local n = #latency
  local buckets = {}
  for i = 1, n do
    local value, count = latency(i)
    buckets[i] = "[" .. num(value) .. "," .. num(count) .. "]"
  end
  local min, max, mean, stdev = "null", "null", "null", "null"
  local p50, p90, p99, p999 = "null", "null", "null", "null"
  if n > 0 then
    min, max = num(latency.min), num(latency.max)
    mean, stdev = string.format("%.3f", latency.mean), string.format("%.3f", latency.stdev)
    p50, p90 = num(latency:percentile(50)), num(latency:percentile(90))
    p99, p999 = num(latency:percentile(99)), num(latency:percentile(99.9))
  end
  io.write("\nNGINX_SIZING_JSON {",
    '"duration_us":', num(summary.duration),
    ',"requests":', num(summary.requests),
    ',"bytes":', num(summary.bytes),
    ',"errors":{"connect":', num(e.connect), ',"read":', num(e.read),
    ',"write":', num(e.write), ',"status":', num(e.status), ',"timeout":', num(e.timeout), '}',
    ',"latency_us":{"min":', min, ',"max":', max, ',"mean":', mean, ',"stdev":', stdev,
    ',"p50":', p50, ',"p90":', p90, ',"p99":', p99, ',"p999":', p999, '}',
    ',"histogram_us":[', table.concat(buckets, ","), "]}\n")
end
