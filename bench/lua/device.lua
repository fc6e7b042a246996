-- A new installation per call: 43 base64url characters, a per-run prefix, eight hex digits drawn
-- once per wrk process, the thread and a counter. The process's digits keep a run's installations
-- apart from its warm-up's: both are wrk processes with the same prefix, the same counter from 1
-- and, seeded by thread, the same keys in the same order, so without them every installation of a
-- run after a warm-up was the warm-up's again (a seat taken again, not a new one).
local counter = 0
local urandom = io.open("/dev/urandom", "rb")
local run_id = string.format("%02x%02x%02x%02x", urandom:read(4):byte(1, 4))
urandom:close()

function setup_device_threads(thread)
  report_thread(thread)
  thread_count = (thread_count or 0) + 1
  thread:set("tid", thread_count)
end

function new_device(prefix, product)
  counter = counter + 1
  local hash = string.format("%s%s%s%012d", prefix, run_id, string.char(64 + (tid or 1)), counter)
  return string.format('{"hash":"%s","name":"Bench PC","platform":"win-x64","version":"1.0.0","product":"%s"}', hash, product)
end
