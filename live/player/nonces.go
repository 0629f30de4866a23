package player

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// memoryNonces is the in-memory replay store: a map from nonce to its
// token's expiry.
type memoryNonces struct {
	nonces map[[nonceLen]byte]int64 // nonce -> expiry (Unix seconds)
	oldest int64                    // no entry expires before this
}

// NewMemoryNonces returns a replay store in process memory: a restarted
// node forgets it (use OpenNonceFile to remember).
func NewMemoryNonces() NonceStore { return &memoryNonces{nonces: map[[nonceLen]byte]int64{}} }

func (m *memoryNonces) Use(nonce [nonceLen]byte, expires, now int64, max int) error {
	if exp, dup := m.nonces[nonce]; dup && exp > now {
		return ErrTokenReplayed
	}
	if len(m.nonces) >= max {
		m.expire(now)
		if len(m.nonces) >= max {
			return fmt.Errorf("%w (%d unexpired nonces)", ErrReplayFull, len(m.nonces))
		}
	}
	m.nonces[nonce] = expires
	return nil
}

func (m *memoryNonces) Len() int { return len(m.nonces) }

// expire forgets the nonces of expired tokens (they are refused as
// expired anyway).
func (m *memoryNonces) expire(now int64) {
	if now <= m.oldest {
		return
	}
	oldest := int64(1 << 62)
	for k, exp := range m.nonces {
		if exp <= now {
			delete(m.nonces, k)
		} else {
			oldest = min(oldest, exp)
		}
	}
	m.oldest = oldest
}

// NonceFile is the name of the replay store's file in a node's data
// directory.
const NonceFile = "nonces"

// nonceRecord is one record of a nonce file: the nonce and its token's
// expiry (Unix seconds, big-endian).
const nonceRecord = nonceLen + 8

// FileNonces is a replay store that survives restarts: every nonce is
// appended to a file and synced to disk before the token it belongs to is
// accepted, and the file is read back at the next start. The file is
// rewritten without the expired nonces when it opens and whenever it
// holds twice as many records as unexpired nonces.
type FileNonces struct {
	mem     memoryNonces
	path    string
	f       *os.File
	records int
}

// OpenNonceFile opens (creating it if missing) the replay store at path,
// forgetting the nonces of tokens expired at now (Unix seconds). A file
// whose length is not a whole number of records is refused: it was
// truncated by something else than this store (a write interrupted by a
// crash leaves a partial last record, which is dropped, since its token
// was never accepted).
func OpenNonceFile(path string, now int64) (*FileNonces, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("player: replay store: %w", err)
	}
	data = data[:len(data)-len(data)%nonceRecord] // a torn last record
	s := &FileNonces{mem: memoryNonces{nonces: map[[nonceLen]byte]int64{}}, path: path}
	for p := data; len(p) >= nonceRecord; p = p[nonceRecord:] {
		var n [nonceLen]byte
		copy(n[:], p)
		if exp := int64(binary.BigEndian.Uint64(p[nonceLen:])); exp > now {
			s.mem.nonces[n] = max(s.mem.nonces[n], exp)
		}
	}
	if err := s.rewrite(); err != nil {
		return nil, err
	}
	return s, nil
}

// rewrite writes the unexpired nonces to a new file and replaces the old
// one with it (atomically, by rename), then appends to it.
func (s *FileNonces) rewrite() error {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	tmp := s.path + ".tmp"
	buf := make([]byte, 0, len(s.mem.nonces)*nonceRecord)
	for n, exp := range s.mem.nonces {
		buf = append(buf, n[:]...)
		buf = binary.BigEndian.AppendUint64(buf, uint64(exp))
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		if _, err = f.Write(buf); err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err == nil {
		if d, derr := os.Open(filepath.Dir(s.path)); derr == nil {
			_ = d.Sync()
			d.Close()
		}
		s.f, err = os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o600)
	}
	if err != nil {
		return fmt.Errorf("player: %w: %v", ErrReplayStore, err)
	}
	s.records = len(s.mem.nonces)
	return nil
}

// Use implements NonceStore: the nonce is on disk before it returns nil.
func (s *FileNonces) Use(nonce [nonceLen]byte, expires, now int64, max int) error {
	if exp, dup := s.mem.nonces[nonce]; dup && exp > now {
		return ErrTokenReplayed
	}
	if len(s.mem.nonces) >= max {
		s.mem.expire(now)
		if len(s.mem.nonces) >= max {
			return fmt.Errorf("%w (%d unexpired nonces)", ErrReplayFull, len(s.mem.nonces))
		}
	}
	if s.f == nil {
		return fmt.Errorf("%w: closed", ErrReplayStore)
	}
	var rec [nonceRecord]byte
	copy(rec[:], nonce[:])
	binary.BigEndian.PutUint64(rec[nonceLen:], uint64(expires))
	if _, err := s.f.Write(rec[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrReplayStore, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("%w: %v", ErrReplayStore, err)
	}
	s.mem.nonces[nonce] = expires
	s.records++
	if s.records > 2*len(s.mem.nonces)+1024 {
		s.mem.expire(now)
		if err := s.rewrite(); err != nil {
			return err // the nonce is recorded in memory, and on disk in the old file
		}
	}
	return nil
}

// Len implements NonceStore.
func (s *FileNonces) Len() int { return len(s.mem.nonces) }

// Close closes the file.
func (s *FileNonces) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

var _ io.Closer = (*FileNonces)(nil)
