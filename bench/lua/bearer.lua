-- GET one path with one entitlement token: wrk ... -- TOKEN PATH [no-lua]
-- Every answer but a 200 is counted (expect_200), unless the third argument is "no-lua": no Lua
-- then runs per answer, for an installer's bytes (which Lua must not be handed) and for a
-- reference server whose rate wrk's own work per answer must not cap; wrk's count of answers
-- above 399 is then what fails the run.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")

function init(args)
  if args[3] ~= "no-lua" then expect_200() end
  req = wrk.format("GET", args[2], { ["Authorization"] = "Bearer " .. args[1] })
end

function request()
  return req
end
