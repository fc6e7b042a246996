-- The 4a mix's 1 % releases list (1.6 MB answers at 10,000 releases), one connection paced:
-- wrk ... -- TOKEN DELAY_MS
-- No response() here: wrk would copy every body into Lua, which cost the load more than keyturn's
-- answer did. wrk still counts every answer above 399 (report.lua's errors.status, which fails the
-- run); bench/run.ts checks before the load that the list answers 200.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")

function init(args)
  list = wrk.format("GET", "/api/v1/releases?product=alpha", { ["Authorization"] = "Bearer " .. args[1] })
  pause = tonumber(args[2])
end

function delay()
  return pause
end

function request()
  return list
end
