package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
)

// Orders of the software list by title.
const (
	TitlesByHosts = "hosts" // most endpoints first, then name
	TitlesByName  = "name"
)

// SoftwareTitleQuery filters and orders the software list by title.
type SoftwareTitleQuery struct {
	OrgID string
	// Q and Publisher match a part of the title's name and publisher,
	// ignoring case.
	Q, Publisher  string
	Sort          string // TitlesByHosts (the default) or TitlesByName
	Limit, Offset int
}

// ListSoftwareTitles pages the organization's software titles present on
// at least one endpoint, with their versions. It reads the counters the
// inventory writer keeps (software_titles.hosts and installs,
// software_versions): a page costs a walk of the catalog's index (on
// PostgreSQL, by hosts: a sort of the organization's titles) and one
// look-up of the page's versions, whatever the fleet's size.
func (s *Store) ListSoftwareTitles(ctx context.Context, q SoftwareTitleQuery) ([]apiv1.SoftwareTitle, int, error) {
	out := make([]apiv1.SoftwareTitle, 0, min(q.Limit, 200))
	total := 0
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		where := `org_id = ? AND hosts > 0`
		args := []any{q.OrgID}
		if q.Q != "" {
			where += ` AND name_lower LIKE ? ESCAPE '\'`
			args = append(args, likePattern(q.Q))
		}
		if q.Publisher != "" {
			where += ` AND LOWER(publisher) LIKE ? ESCAPE '\'`
			args = append(args, likePattern(q.Publisher))
		}
		order := ` ORDER BY hosts DESC, id`
		if q.Sort == TitlesByName {
			order = ` ORDER BY name_lower, id`
		}
		if err := r.queryRow(ctx, `SELECT COUNT(*) FROM software_titles WHERE `+where, args...).Scan(&total); err != nil {
			return fmt.Errorf("store: count software titles: %w", err)
		}
		rows, err := r.query(ctx, `SELECT id, name, publisher, hosts, installs FROM software_titles WHERE `+where+order+` LIMIT ? OFFSET ?`,
			append(args, q.Limit, q.Offset)...)
		var ids []int64
		if err := eachRow(rows, err, func(row *sql.Rows) error {
			var id int64
			var t apiv1.SoftwareTitle
			var publisher sql.NullString
			if err := row.Scan(&id, &t.Name, &publisher, &t.Hosts, &t.Installs); err != nil {
				return err
			}
			t.Publisher = nullString(publisher)
			t.Versions = []apiv1.SoftwareTitleVersion{}
			ids = append(ids, id)
			out = append(out, t)
			return nil
		}); err != nil {
			return fmt.Errorf("store: list software titles: %w", err)
		}
		// Each title's most common versions: through the index (title_id,
		// hosts DESC, version_key) on SQLite, where a title seen in a
		// thousand versions costs its first ones; on PostgreSQL its versions
		// are sorted (migration 037 dropped that index so that the
		// inventory writer's counter updates are made in place). A count
		// only when there are more.
		for i, id := range ids {
			if err := r.titleVersions(ctx, id, &out[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return out, total, err
}

func (r *ReadTx) titleVersions(ctx context.Context, id int64, t *apiv1.SoftwareTitle) error {
	vs, err := r.readTitleVersions(ctx, id, apiv1.MaxTitleVersions+1)
	if err != nil {
		return err
	}
	t.Versions, t.VersionCount = vs, len(vs)
	if len(t.Versions) > apiv1.MaxTitleVersions {
		t.Versions = t.Versions[:apiv1.MaxTitleVersions]
		return r.countTitleVersions(ctx, id, &t.VersionCount)
	}
	return nil
}

// readTitleVersions reads a title's first limit versions, most endpoints
// first.
func (r *ReadTx) readTitleVersions(ctx context.Context, id int64, limit int) ([]apiv1.SoftwareTitleVersion, error) {
	rows, err := r.query(ctx, `SELECT version_key, hosts FROM software_versions WHERE title_id = ? AND hosts > 0
		ORDER BY hosts DESC, version_key LIMIT ?`, id, limit)
	out := []apiv1.SoftwareTitleVersion{}
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var v apiv1.SoftwareTitleVersion
		var key string
		if err := row.Scan(&key, &v.Hosts); err != nil {
			return err
		}
		if key != "" {
			v.Version = &key
		}
		out = append(out, v)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: software title versions: %w", err)
	}
	return out, nil
}

func (r *ReadTx) countTitleVersions(ctx context.Context, id int64, n *int) error {
	if err := r.queryRow(ctx, `SELECT COUNT(*) FROM software_versions WHERE title_id = ? AND hosts > 0`, id).Scan(n); err != nil {
		return fmt.Errorf("store: software title versions: %w", err)
	}
	return nil
}

// MaxTitlePageVersions bounds the versions SoftwareTitleByName answers.
const MaxTitlePageVersions = 500

// SoftwareTitleByName answers the organization's software title of that
// exact name with its versions, most endpoints first (at most
// MaxTitlePageVersions; VersionCount counts them all), or dberr.ErrNotFound when
// no endpoint has it.
func (s *Store) SoftwareTitleByName(ctx context.Context, orgID, name string) (apiv1.SoftwareTitle, error) {
	var t apiv1.SoftwareTitle
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		var id int64
		var publisher sql.NullString
		err := r.queryRow(ctx, `SELECT id, name, publisher, hosts, installs FROM software_titles WHERE org_id = ? AND name = ? AND hosts > 0`,
			orgID, name).Scan(&id, &t.Name, &publisher, &t.Hosts, &t.Installs)
		if errors.Is(err, sql.ErrNoRows) {
			return dberr.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("store: software title: %w", err)
		}
		t.Publisher = nullString(publisher)
		if t.Versions, err = r.readTitleVersions(ctx, id, MaxTitlePageVersions); err != nil {
			return err
		}
		t.VersionCount = len(t.Versions)
		if t.VersionCount == MaxTitlePageVersions {
			return r.countTitleVersions(ctx, id, &t.VersionCount)
		}
		return nil
	})
	return t, err
}
