package store

import (
	"context"
	"database/sql"
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
	// checkpointFrom is the log size that starts a background checkpoint.
	checkpointFrom = 4 << 20
	// walSafetyPages is the writer's own checkpoint threshold (64 MiB of
	// 4 KiB pages).
	walSafetyPages = 16384
)

// checkpointer copies the write-ahead log of the SQLite file path into
// the database in the background until stop is called.
type checkpointer struct {
	db   *sql.DB
	wal  string
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
	c := &checkpointer{db: db, wal: path + "-wal", stop: stop, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	// SQLite writes the log from its start again once a checkpoint copied
	// all of it, but never shrinks the file: past checkpointFrom, the
	// file's size says nothing of what is left to copy. A log written
	// since the last checkpoint began has changed size or time; one that
	// has not, after a checkpoint that copied all of it, is left alone (an
	// idle server then makes no checkpoint).
	var copied os.FileInfo
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		fi, err := os.Stat(c.wal)
		if err != nil || fi.Size() < checkpointFrom {
			continue
		}
		if copied != nil && fi.Size() == copied.Size() && fi.ModTime().Equal(copied.ModTime()) {
			continue
		}
		// busy, the frames in the log, those copied: a reader's snapshot
		// can keep a passive checkpoint from copying all, and then the
		// next tick tries again.
		var busy, frames, done int
		if err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done); err != nil {
			if ctx.Err() == nil {
				slog.Warn("store: background checkpoint of the SQLite log", "err", err)
			}
			continue
		}
		if done >= frames {
			copied = fi
		} else {
			copied = nil
		}
	}
}

// close stops the checkpoints and closes the connection.
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}
