-- wrk-count.lua — make wrk count its answers like ll-load does.
--
--     wrk -t2 -c64 -d10s -s bench/load/wrk-count.lua 'http://127.0.0.1:8080/check/lock?lock=none'
--
-- wrk itself reports only "Non-2xx or 3xx responses". This script counts
-- every answer by HTTP status and by the JSON "result" field of its body
-- (sold, sold_out, lock_timeout, …), one table per wrk thread, and done()
-- merges the threads' tables and prints ONE line of JSON with the keys of
-- `ll-load --json` (requests, responses, transport_errors, elapsed_s, rps,
-- lat_*_ms, status{}, result{}, lat_percentiles), so bench/compare reads
-- either the same way. lat_percentiles is the latency at ll-load's list of
-- quantiles, from wrk's own histogram: [q, ms] pairs, 0 the minimum, 1 the
-- maximum. There is no per_second: wrk's Lua has only os.time(), whole
-- wall-clock seconds not aligned with the run's start, and bench/compare
-- needs a live count during the run anyway, which wrk cannot give; so it
-- polls the instances' /stats once a second for both.
-- Requests still in flight when the duration ends are not counted: the
-- server may have sold them (at most one per connection).

local threads = {}

-- With LOCKLAB_WRK_PRODUCTS=N (bench/compare --products N) each request of
-- a thread names the next of products 1001..1000+N in place of the URL's
-- product=, as ll-load does with N URLs. Without it the request is the
-- URL's, built once (wrk asks for request() only when it is defined).
local products = tonumber(os.getenv("LOCKLAB_WRK_PRODUCTS") or "1") or 1
if products > 1 then
   local turn = 0
   function request()
      turn = turn + 1
      local path = wrk.path:gsub("product=%d+", "product=" .. (1001 + turn % products))
      return wrk.format(nil, path)
   end
end

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   statuses = {}
   results = {}
end

function response(status, headers, body)
   local s = tostring(status)
   statuses[s] = (statuses[s] or 0) + 1
   local r = body and body:match('"result"%s*:%s*"([%w_]+)"')
   if r then
      results[r] = (results[r] or 0) + 1
   end
end

local function merge(into, from)
   for k, v in pairs(from or {}) do
      into[k] = (into[k] or 0) + v
   end
end

local function object(t)
   local keys, parts = {}, {}
   for k in pairs(t) do table.insert(keys, k) end
   table.sort(keys)
   for _, k in ipairs(keys) do
      table.insert(parts, string.format('"%s":%d', k, t[k]))
   end
   return "{" .. table.concat(parts, ",") .. "}"
end

-- The quantiles of ll-load's --json (bench/load/load.c, lat_quantiles).
local quantiles = {
   0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.96, 0.97,
   0.98, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 1,
}

local function percentiles(latency)
   local parts = {}
   for _, q in ipairs(quantiles) do
      local us
      if q <= 0 then us = latency.min
      elseif q >= 1 then us = latency.max
      else us = latency:percentile(q * 100) end
      table.insert(parts, string.format("[%g,%.3f]", q, us / 1000.0))
   end
   return "[" .. table.concat(parts, ",") .. "]"
end

function done(summary, latency, requests)
   local st, rs = {}, {}
   for _, t in ipairs(threads) do
      merge(st, t:get("statuses"))
      merge(rs, t:get("results"))
   end
   local e = summary.errors
   local transport = e.connect + e.read + e.write + e.timeout
   local seconds = summary.duration / 1e6
   local function ms(us) return us / 1000.0 end
   io.write(string.format(
      '{"driver":"wrk","requests":%d,"responses":%d,"transport_errors":%d,' ..
      '"err_connect":%d,"err_read":%d,"err_write":%d,"err_timeout":%d,' ..
      '"threads":%d,"elapsed_s":%.3f,"rps":%.1f,' ..
      '"lat_mean_ms":%.3f,"lat_min_ms":%.3f,"lat_p50_ms":%.3f,"lat_p90_ms":%.3f,' ..
      '"lat_p95_ms":%.3f,"lat_p99_ms":%.3f,"lat_max_ms":%.3f,' ..
      '"status":%s,"result":%s,"lat_percentiles":%s}\n',
      summary.requests + transport, summary.requests, transport,
      e.connect, e.read, e.write, e.timeout, #threads,
      seconds, seconds > 0 and (summary.requests + transport) / seconds or 0,
      ms(latency.mean), ms(latency.min), ms(latency:percentile(50)),
      ms(latency:percentile(90)), ms(latency:percentile(95)),
      ms(latency:percentile(99)), ms(latency.max),
      object(st), object(rs), percentiles(latency)))
end
