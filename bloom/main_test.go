package bloom

import (
	"io"
	"log/slog"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

func TestMain(m *testing.M) { redistest.MainQuiet(m) }

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))
