-- Shared by every scenario script: one JSON line the harness reads (latencies in microseconds).

-- The threads, so that done() can read each one's count of answers other than 200.
report_threads = {}
function report_thread(thread)
  report_threads[#report_threads + 1] = thread
end
setup = report_thread

-- Counts every answer but a 200 (wrk itself counts only those above 399, as errors.status); the
-- harness fails on any. For scripts whose answers are small, called from init: with a response
-- function wrk keeps each body for Lua, which a 256 MiB download must not pay.
function expect_200()
  unexpected = 0
  response = function(status)
    if status ~= 200 then unexpected = unexpected + 1 end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local not200 = 0
  for _, thread in ipairs(report_threads) do not200 = not200 + (thread:get("unexpected") or 0) end
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"not200":%d},"latencyUs":{"mean":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout, not200,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
