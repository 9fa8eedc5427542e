package redistest

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CommandStat reads cmd's line of INFO commandstats on c's node: how many
// times it ran and the microseconds it took there, both 0 if it never ran
// since the last CONFIG RESETSTAT.
func CommandStat(ctx context.Context, c *redis.Client, cmd string) (calls int64, usec float64, err error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+strings.ToLower(cmd)+":")
		if !ok {
			continue
		}
		for _, field := range strings.Split(rest, ",") {
			name, v, _ := strings.Cut(field, "=")
			switch name {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return calls, usec, nil
}
