package consistency

import "strconv"

// Time in the queue's scripts. Every due time and visibility deadline is
// computed inside a script from the Redis server's clock (TIME), never from
// the instance's: an instance whose clock runs ahead would otherwise run
// second deletes early, inside the replica-lag window they wait out, and one
// running behind would delay everyone's. Since Redis 5 scripts replicate
// their effects rather than their body, so calling TIME before a write is
// allowed (and the cluster-supported 7.x always does so).
//
// nowLua sets the Lua local now to the server's time in milliseconds,
// unless ARGV[n] pins it (tests that drive the queue with a fake clock;
// always empty in production).
func nowLua(n string) string {
	return `
local now
if ARGV[` + n + `] ~= '' then
	now = tonumber(ARGV[` + n + `])
else
	local tm = redis.call('TIME')
	now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end
`
}

// nowArg is the argument nowLua reads: empty, or the pinned time in ms.
func (q *Queue) nowArg() string {
	if q.cfg.pin == nil {
		return ""
	}
	return strconv.FormatInt(q.cfg.pin().UnixMilli(), 10)
}
