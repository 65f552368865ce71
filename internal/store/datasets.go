package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"
)

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// smallDataset is the size under which a dataset is stored as plain JSON:
// compressing it would cost more than it saves.
const smallDataset = 1024

// compressRows is the stored form of a dataset: its rows as a JSON array,
// gzip-compressed unless it is small.
func compressRows(rows []map[string]any) ([]byte, error) {
	plain, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	if len(plain) < smallDataset {
		return plain, nil
	}
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(plain); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decompressRows(b []byte) ([]map[string]any, error) {
	var rows []map[string]any
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		err := json.Unmarshal(b, &rows)
		return rows, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	if err := json.NewDecoder(io.Reader(zr)).Decode(&rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// DatasetRows is one endpoint's rows of a dataset.
type DatasetRows struct {
	EndpointID   string
	EndpointName string
	CollectedAt  time.Time
	Rows         []map[string]any
}

// Datasets yields, endpoint by endpoint in name order, the rows of the named
// dataset across the organization (the raw material of reports). One
// endpoint's rows are in memory at a time.
func (s *Store) Datasets(ctx context.Context, orgID, name string) iter.Seq2[DatasetRows, error] {
	return func(yield func(DatasetRows, error) bool) {
		rows, err := s.query(ctx, `SELECT d.endpoint_id, COALESCE(e.display_name, e.hostname), d.collected_at, d.rows_gz
			FROM endpoint_datasets d JOIN endpoints e ON e.id = d.endpoint_id
			WHERE d.org_id = ? AND d.name = ? ORDER BY e.sort_name, e.id`, orgID, name)
		if err != nil {
			yield(DatasetRows{}, fmt.Errorf("store: dataset %s: %w", name, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var d DatasetRows
			var at int64
			var blob []byte
			if err := rows.Scan(&d.EndpointID, &d.EndpointName, &at, &blob); err != nil {
				yield(DatasetRows{}, fmt.Errorf("store: dataset %s: %w", name, err))
				return
			}
			d.CollectedAt = fromMillis(at)
			if d.Rows, err = decompressRows(blob); err != nil {
				yield(DatasetRows{}, fmt.Errorf("store: dataset %s of %s: %w", name, d.EndpointID, err))
				return
			}
			if !yield(d, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(DatasetRows{}, fmt.Errorf("store: dataset %s: %w", name, err))
		}
	}
}
