-- wrk: GET $WRK_PATH followed by an 8-digit index, over $WRK_N names in
-- turn (as shoal-loader's names: <prefix>00000000 ...), so an independent
-- client reads the same objects the loader does.
local base = os.getenv("WRK_PATH")
local query = os.getenv("WRK_QUERY")   -- appended as "?QUERY" when set
local n = tonumber(os.getenv("WRK_N"))
local i = 0

request = function()
  i = (i + 1) % n
  local path = string.format("%s%08d", base, i)
  if query and query ~= "" then
    path = path .. "?" .. query
  end
  return wrk.format("GET", path)
end
