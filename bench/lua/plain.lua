-- A plain GET of the URL given to wrk (the nginx references).
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
