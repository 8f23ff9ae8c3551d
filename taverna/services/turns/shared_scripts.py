"""The Lua scripts the registry shared through Redis runs there (see `shared_runs`)."""

# Release a chat's claim only if it still names this run.
RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"
# Append events to several runs' streams in one command. ARGV[1]: how long a finished run's
# keys are kept; then, for each stream of KEYS in turn, the index of its first event, how
# many, whether the last ends the run, the chat's claim and the run's id, then the events
# (event `i` under the entry id `0-{i+1}`). A run that ended is marked done and its chat's
# claim released. A run whose hash Redis lacks (it came back empty from a restart) is left
# alone: the indexes (from 1) of those are returned, to be written again from the start.
APPEND = """
local keep, at, missing = tonumber(ARGV[1]), 2, {}
for k = 1, #KEYS do
  local first, count, ends = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), ARGV[at + 2]
  local claim, run = ARGV[at + 3], ARGV[at + 4]
  at = at + 5
  local meta = string.sub(KEYS[k], 1, -8)
  if redis.call('exists', meta) == 0 then
    table.insert(missing, k)
  else
    for i = 0, count - 1 do
      redis.call('xadd', KEYS[k], '0-' .. (first + i + 1), 'e', ARGV[at + i])
    end
    if ends == '1' then
      redis.call('hset', meta, 'done', '1')
      redis.call('expire', KEYS[k], keep)
      redis.call('expire', meta, keep)
      if redis.call('get', claim) == run then redis.call('del', claim) end
    end
  end
  at = at + count
end
return missing
"""
