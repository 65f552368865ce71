package api

import (
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/httpx"
)

// listOf is the List answer of a whole list: each store row turned into
// its wire form by out, total the number of rows. Every list handler
// answers through httpx.NewList, this way when it maps rows one to one.
func listOf[S, T any](rows []S, out func(S) T) apiv1.List[T] {
	items := make([]T, len(rows))
	for i, row := range rows {
		items[i] = out(row)
	}
	return httpx.NewList(items, len(items))
}
