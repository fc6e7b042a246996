-- POST /licenses/activate, a new installation every time: wrk ... -- KEYS_FILE PREFIX
-- KEYS_FILE holds license keys, one a line; each request picks one at random.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
dofile(os.getenv("BENCH_LUA_DIR") .. "/device.lua")

setup = setup_device_threads

function init(args)
  expect_200()
  keys = {}
  for line in io.lines(args[1]) do keys[#keys + 1] = line end
  prefix = args[2]
  math.randomseed(tid or 1)
  headers = { ["Content-Type"] = "application/json" }
end

function request()
  local key = keys[math.random(#keys)]
  local body = string.format('{"key":"%s","device":%s}', key, new_device(prefix, "alpha"))
  return wrk.format("POST", "/api/v1/licenses/activate", headers, body)
end
