-- GET one path with tokens picked at random from a file: wrk ... -- TOKENS_FILE PATH
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")

function init(args)
  expect_200()
  reqs = {}
  for line in io.lines(args[1]) do
    reqs[#reqs + 1] = wrk.format("GET", args[2], { ["Authorization"] = "Bearer " .. line })
  end
  math.randomseed(os.time())
end

function request()
  return reqs[math.random(#reqs)]
end
