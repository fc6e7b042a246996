-- A new installation per call: 43 base64url characters, a per-run prefix, the thread and a counter.
local counter = 0

function setup_device_threads(thread)
  report_thread(thread)
  thread_count = (thread_count or 0) + 1
  thread:set("tid", thread_count)
end

function new_device(prefix, product)
  counter = counter + 1
  local hash = string.format("%s%s%020d", prefix, string.char(64 + (tid or 1)), counter)
  return string.format('{"hash":"%s","name":"Bench PC","platform":"win-x64","version":"1.0.0","product":"%s"}', hash, product)
end
