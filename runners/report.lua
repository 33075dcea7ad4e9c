-- wrk reporter for nginx-sizing: after the run, print one JSON object on a line of its own,
-- prefixed with NGINX_SIZING_JSON. It carries the summary, every error counter, wrk's own
-- percentiles and the full latency histogram as [microseconds, count] pairs (wrk keeps one
-- bucket per microsecond, so histograms from several clients merge exactly by summing).
--
-- With NGINX_SIZING_START set (seconds since the epoch, this host's clock), wrk waits for
-- that instant itself before it starts its threads: its start-up (exec, Lua, resolving)
-- happens before the common start of several clients. It stamps on standard error when it
-- was ready, when it started (NGINX_SIZING_WINDOW_READY / _START) and, as its report
-- begins, when it ended (NGINX_SIZING_WINDOW_END) (runners/window.py reads them).

local has_ffi, ffi = pcall(require, "ffi")
if has_ffi then
  ffi.cdef [[
    struct nginx_sizing_timespec { long tv_sec; long tv_nsec; };
    int clock_gettime(int clock, struct nginx_sizing_timespec *ts);
    int nanosleep(const struct nginx_sizing_timespec *req, struct nginx_sizing_timespec *rem);
  ]]
end

-- The wall clock [s since the epoch].
local function now()
  if has_ffi then
    local ts = ffi.new("struct nginx_sizing_timespec")
    ffi.C.clock_gettime(0, ts) -- CLOCK_REALTIME
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
  end
  local p = io.popen("date +%s.%N")
  local t = tonumber(p:read("*l"))
  p:close()
  return t
end

local function sleep(seconds)
  if has_ffi then
    local ts = ffi.new("struct nginx_sizing_timespec")
    ts.tv_sec = math.floor(seconds)
    ts.tv_nsec = math.floor((seconds - math.floor(seconds)) * 1e9)
    ffi.C.nanosleep(ts, nil)
  else
    os.execute(string.format("sleep %.6f", seconds))
  end
end

local function stamp(name, t)
  io.stderr:write(string.format("\nNGINX_SIZING_WINDOW_%s %.6f\n", name, t))
  io.stderr:flush()
end

local start_at = tonumber(os.getenv("NGINX_SIZING_START") or "")
local started = false

-- Called in wrk's main thread before each of its threads is created: the first call waits.
setup = function(thread)
  if start_at == nil or started then
    return
  end
  started = true
  local t = now()
  stamp("READY", t)
  while t < start_at do
    sleep(start_at - t)
    t = now()
  end
  stamp("START", t)
end

local function num(x)
  if x ~= x or x == math.huge or x == -math.huge then
    return "null"
  end
  return string.format("%.0f", x)
end

-- The non-empty buckets as "[us,count]" strings, read from wrk's stats array in one pass
-- (LuaJIT's FFI); nil when that array does not look as wrk 4 lays it out.
local function fast_buckets(latency, n)
  if not has_ffi or n == 0 then
    return nil
  end
  local ok, s = pcall(function()
    return ffi.cast("uint64_t **", latency)[0] -- count, limit, min, max, data[limit]
  end)
  if not ok or s == nil or tonumber(s[2]) ~= latency.min or tonumber(s[3]) ~= latency.max then
    return nil
  end
  local buckets = {}
  for us = latency.min, latency.max do
    local count = s[4 + us]
    if count > 0 then
      buckets[#buckets + 1] = "[" .. num(us) .. "," .. num(tonumber(count)) .. "]"
    end
  end
  local first, first_count = latency(1)
  if #buckets ~= n or buckets[1] ~= "[" .. num(first) .. "," .. num(first_count) .. "]" then
    return nil
  end
  return buckets
end

done = function(summary, latency, requests)
  if start_at ~= nil then
    stamp("END", now())
  end
  local e = summary.errors
  local n = #latency
  local buckets = fast_buckets(latency, n)
  if buckets == nil then
    buckets = {}
    for i = 1, n do -- wrk finds the i-th bucket from the first: slower, same answer
      local value, count = latency(i)
      buckets[i] = "[" .. num(value) .. "," .. num(count) .. "]"
    end
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
