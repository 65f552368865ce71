package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

var idClock struct {
	sync.Mutex
	ms  uint64
	seq uint16
}

// NewID returns an opaque, time-ordered random id in the layout of a UUIDv7
// (48 bits of Unix milliseconds, a 12-bit sequence, then random bits),
// written as 32 hex digits. Ids made by one process are strictly increasing,
// so rows created in the same millisecond keep their order.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	idClock.Lock()
	ms := uint64(time.Now().UnixMilli())
	if ms > idClock.ms {
		idClock.ms = ms
		idClock.seq = binary.BigEndian.Uint16(b[6:8]) & 0x07ff // leave room to count up
	} else {
		idClock.seq++
		if idClock.seq > 0x0fff {
			idClock.ms++
			idClock.seq = 0
		}
	}
	ms, seq := idClock.ms, idClock.seq
	idClock.Unlock()
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	binary.BigEndian.PutUint16(b[6:8], 0x7000|seq) // version 7
	b[8] = 0x80 | (b[8] & 0x3f)                    // variant
	return hex.EncodeToString(b[:])
}
