-- GET one path with one entitlement token: wrk ... -- TOKEN PATH
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")

function init(args)
  req = wrk.format("GET", args[2], { ["Authorization"] = "Bearer " .. args[1] })
end

function request()
  return req
end
