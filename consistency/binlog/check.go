package binlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// ErrServerSetting is wrapped by the error Run returns when the server is
// not configured for a Source; the message names the setting and the value
// it needs.
var ErrServerSetting = errors.New("cacheguard: binlog: server setting")

// ErrNoColumnNames is wrapped by the error Run returns for a row event of a
// watched table without column names: keys can only be computed from the
// columns a row was written with, and the event does not say which they
// were (see WithSkipUnnamedRows).
var ErrNoColumnNames = errors.New("cacheguard: binlog: row event without column names")

// required are the settings a Source needs, with the value each must have.
//
//   - log_bin=ON: there is a binlog to read.
//   - binlog_format=ROW: statements cannot be turned into keys.
//   - binlog_row_image=FULL: every image carries every column, so a rule's
//     key columns are there whatever the statement changed.
//   - binlog_row_metadata=FULL: each event names its columns, so that keys
//     come from the columns the row was written with, even when the binlog
//     is replayed after an ALTER TABLE (MySQL 8.0.1+, MariaDB 10.5+).
var required = []struct{ name, want string }{
	{"log_bin", "ON"},
	{"binlog_format", "ROW"},
	{"binlog_row_image", "FULL"},
	{"binlog_row_metadata", "FULL"},
}

// checkServer verifies the server's settings and returns its current binlog
// position.
func (s *Source) checkServer(ctx context.Context) (Position, error) {
	var pos Position
	// The whole check within the lease (twice it, at least 5 s): a
	// connection that answers nothing (a cut network) must not hold a
	// tailer that renews its lease meanwhile.
	ctx, cancel := context.WithTimeout(ctx, max(2*s.opt.lease, 5*time.Second))
	defer cancel()
	deadline, _ := ctx.Deadline()
	conn, err := client.ConnectWithContext(ctx, s.cfg.Addr, s.cfg.User, s.cfg.Password, "", time.Until(deadline))
	if err != nil {
		return pos, kind.Errorf("cacheguard: binlog: connect: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return pos, kind.Errorf("cacheguard: binlog: connect: %w", err)
	}
	for _, r := range required {
		res, err := conn.Execute("SELECT @@GLOBAL." + r.name)
		var refused *mysql.MyError
		if err != nil && !errors.As(err, &refused) { // the network, not the setting
			return pos, kind.Errorf("cacheguard: binlog: reading %s: %w", r.name, err)
		}
		if err != nil {
			return pos, fmt.Errorf("%w: reading %s (needed: %s=%s): %v", ErrServerSetting, r.name, r.name, r.want, err)
		}
		got, _ := res.GetString(0, 0)
		if got == "1" && r.want == "ON" {
			got = "ON"
		}
		if !strings.EqualFold(got, r.want) {
			return pos, fmt.Errorf("%w: %s is %q, the binlog source needs %s=%s", ErrServerSetting, r.name, got, r.name, r.want)
		}
	}
	for _, q := range []string{"SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"} {
		res, err := conn.Execute(q)
		if err != nil || res.RowNumber() == 0 {
			continue
		}
		name, _ := res.GetString(0, 0)
		off, _ := res.GetInt(0, 1)
		return Position{File: name, Offset: uint32(off)}, nil
	}
	return pos, fmt.Errorf("cacheguard: binlog: the server reports no binlog position")
}
