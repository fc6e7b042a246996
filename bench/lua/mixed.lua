-- What a fleet of installed programs sends, paced towards a target rate:
-- wrk ... -- TOKEN KEYS_FILE PREFIX MANIFEST_PATH DELAY_MS
-- Of every 99 requests: 65 manifest, 10 signature, 20 current, 4 activation of a new installation.
-- The mix's 1 % releases list comes from releases-list.lua beside it (bench/run.ts, mixedLoad): a
-- 1.6 MB answer handed to Lua's response() here held this client to 6,300 req/s while keyturn's core
-- was 45 % busy (bench/README.md, "4a and 5a, eleventh round").
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
dofile(os.getenv("BENCH_LUA_DIR") .. "/device.lua")

setup = setup_device_threads

function init(args)
  expect_200()
  local auth = { ["Authorization"] = "Bearer " .. args[1] }
  keys = {}
  for line in io.lines(args[2]) do keys[#keys + 1] = line end
  prefix = args[3]
  pause = tonumber(args[5])
  fixed = {
    manifest = wrk.format("GET", args[4], auth),
    signature = wrk.format("GET", args[4] .. ".sig", auth),
    current = wrk.format("GET", "/api/v1/entitlements/current", auth),
  }
  json = { ["Content-Type"] = "application/json" }
  n = 0
end

function delay()
  return pause
end

function request()
  n = n + 1
  local slot = n % 99
  if slot < 65 then return fixed.manifest end
  if slot < 75 then return fixed.signature end
  if slot < 95 then return fixed.current end
  local body = string.format('{"key":"%s","device":%s}', keys[1 + n % #keys], new_device(prefix, "alpha"))
  return wrk.format("POST", "/api/v1/licenses/activate", json, body)
end
