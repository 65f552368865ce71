package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"log/slog"
	"os"
	"time"
)

// SQLite keeps committed pages in its write-ahead log until a checkpoint
// copies them into the database file. By default the committing writer
// does that itself every 1,000 pages, inside its commit: with one writer
// for the whole server, a tenth of the time an enrolling fleet's
// inventories took was that copy, while every other write waited. Here a
// connection of its own copies the log in the background (a passive
// checkpoint runs beside the writer and the readers, and never waits for
// them), and the writer keeps its own checkpoint only as a safety net for
// a log that grew past walSafetyPages.
const (
	// checkpointEvery is how often the log is looked at.
	checkpointEvery = 500 * time.Millisecond
	// checkpointFrom is the size of the log not yet copied that starts a
	// background checkpoint at once.
	checkpointFrom = 4 << 20
	// walSafetyPages is the writer's own checkpoint threshold (64 MiB of
	// 4 KiB pages).
	walSafetyPages = 16384
	// checkpointQuiet is how long a log with less than checkpointFrom
	// left to copy waits after the last checkpoint: a server with a few
	// writes a second (a fleet checking in) then copies a page written by
	// several of them once, and syncs the database file a few times less,
	// while a busy writer's log is still copied every checkpointEvery.
	checkpointQuiet = 5 * time.Second
)

// checkpointer copies the write-ahead log of the SQLite file path into
// the database in the background until stop is called.
type checkpointer struct {
	db   *sql.DB
	wal  string
	shm  string
	stop context.CancelFunc
	done chan struct{}
}

func startCheckpointer(path, pragmas string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?"+pragmas)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, wal: path + "-wal", shm: path + "-shm", stop: stop, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	var last time.Time
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-tick.C:
		}
		if !c.due(now.Sub(last)) {
			continue
		}
		last = now
		if _, err := c.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil && ctx.Err() == nil {
			slog.Warn("store: background checkpoint of the SQLite log", "err", err)
		}
	}
}

// due tells whether the log should be copied now, since a checkpoint
// that began ago. SQLite writes the log from its start again once a
// checkpoint copied all of it, but never shrinks the file: its size says
// nothing of what is left to copy. The wal-index header in the -shm file
// does (https://www.sqlite.org/walformat.html): the frames in the log,
// and those a checkpoint copied. Nothing left: no checkpoint (an idle
// server makes none); checkpointFrom or more: one now; less: one after
// checkpointQuiet. When the header cannot be read (or is being written)
// the log file's size decides, as SQLite's own threshold would.
func (c *checkpointer) due(ago time.Duration) bool {
	left, pageSize, ok := walFramesLeft(c.shm)
	if !ok {
		fi, err := os.Stat(c.wal)
		return err == nil && fi.Size() >= checkpointFrom
	}
	switch {
	case left == 0:
		return false
	case left*pageSize >= checkpointFrom:
		return true
	}
	return ago >= checkpointQuiet
}

// walFramesLeft reads the wal-index header at the start of the -shm file:
// two copies of a 48-byte header (mxFrame, the frames in the log, at
// offset 16; the page size at 14), then nBackfill, the frames copied, at
// offset 96. All in the machine's byte order. ok is false unless both
// copies agree (a writer may be changing them) and the version is known.
func walFramesLeft(shm string) (left, pageSize int64, ok bool) {
	f, err := os.Open(shm)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var h [100]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return 0, 0, false
	}
	if !bytes.Equal(h[0:48], h[48:96]) || binary.NativeEndian.Uint32(h[0:]) != 3007000 {
		return 0, 0, false
	}
	pageSize = int64(binary.NativeEndian.Uint16(h[14:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	mxFrame, backfilled := binary.NativeEndian.Uint32(h[16:]), binary.NativeEndian.Uint32(h[96:])
	if backfilled > mxFrame {
		return 0, pageSize, true
	}
	return int64(mxFrame - backfilled), pageSize, true
}

// close stops the checkpoints and closes the connection.
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}
