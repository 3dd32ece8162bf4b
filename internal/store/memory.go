package store

import "strconv"

// Options are the memory settings of an SQLite store; PostgreSQL ignores them.
//
// What a reader costs in resident memory: its page cache (cache_size), memory
// SQLite allocates and the process holds, and the pages of the database file it
// maps (mmap_size) and touches, which the kernel counts in the process's
// resident size (RssFile, VmHWM) although they are page cache that it can drop.
// With the map, a server that has searched a 400 MB database showed 420 MB
// resident; without it the same searches kept their speed (docs/benchmarks.md,
// "Footprint"), so no map is the default.
type Options struct {
	// ReaderCacheBytes is the page cache of each of the readers (SQLite's
	// cache_size); 0 is DefaultReaderCacheBytes.
	ReaderCacheBytes int64
	// MmapBytes is how much of the database file each reader maps (SQLite's
	// mmap_size); 0 maps nothing and reads with pread.
	MmapBytes int64
}

// Readers is the size of the SQLite read pool.
const Readers = 8

// DefaultReaderCacheBytes is a reader's page cache unless Options say
// otherwise: the copies of substring searches and the indexes' top pages
// are what searches read again and again, and the kernel's page cache keeps
// the rest.
const DefaultReaderCacheBytes = 2 << 20

// minReaderCacheBytes is the smallest reader cache Options may ask for.
const minReaderCacheBytes = 256 << 10

// CacheBytes is the most SQLite's page caches of a store opened with opts hold
// at once: every reader's, the writer's and the WAL checkpointer's (SQLite's
// default, 2 MB each).
func (o Options) CacheBytes() int64 {
	return o.ReaderCachesBytes() + 2*2048*1024
}

// ReaderCachesBytes is the most the readers' page caches hold together.
func (o Options) ReaderCachesBytes() int64 {
	return Readers * o.readerCacheKiB() * 1024
}

func (o Options) readerCacheKiB() int64 {
	b := o.ReaderCacheBytes
	if b == 0 {
		b = DefaultReaderCacheBytes
	}
	return max(b, minReaderCacheBytes) / 1024
}

func (o Options) readerMmap() int64 {
	if strconv.IntSize != 64 {
		return 0 // eight readers' maps would use up a 32-bit address space
	}
	return max(o.MmapBytes, 0)
}
