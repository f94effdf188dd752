/*
 * store/merge.h — sharing one store file with other writers: other
 * processes, and other Store objects of this process.
 *
 * Owns: when a store takes the file lock (store/lock.h) and what it does
 * under it. Every write (commit, the background writer, rotate, the first
 * write of a new store) holds the lock from before it looks at the file
 * until after its rename. Under the lock, if the file changed since this
 * store last read or wrote it (the lock file's counter or the file's
 * identity differ), the file is read again and this store's own changes
 * since then (`dirty`: the stored names its commits and applies touched,
 * each with the generation that touched it; or a clear()) are applied on
 * top of it, per name: the last writer wins per key, as SharedPreferences
 * users expect; a clear() not yet written wins over the whole file (the
 * store's map then stays as it is, and the merge says so: pcb_share_merge's
 * *replaced). Otherwise the merged map replaces the store's map, so the
 * store also sees the other writers' changes. Also owns the once-per-store clean-up of the temp
 * files of writers that died (only under the lock, only of dead pids).
 *
 * A file re-keyed by another writer (rotate) cannot be merged: the commit
 * fails, naming the file, and nothing is written.
 *
 * Locking: pcb_share_note* with the store lock held; pcb_share_lock,
 * _unlock and _written with io_lock held (the file lock is taken after
 * io_lock and before the store lock; only a new store's first write at
 * open, before any other thread can reach the store, takes io_lock inside
 * it). Never called with the GIL held: the
 * file lock may wait up to lock_timeout seconds.
 */
#ifndef PCB_STORE_MERGE_H
#define PCB_STORE_MERGE_H

#include <stdint.h>

#include "common/status.h"
#include "store/lock.h"
#include "store/map.h"
#include "store/store.h"

/* A store's part in sharing its file, merge.c's alone (opaque): its lock
 * file and descriptor, what the file looked like when last read or
 * written, and the names this store changed since (the merge's notes). */
typedef struct pcb_share pcb_share;

/* A new share (nothing held or seen); NULL out of memory. */
pcb_share *pcb_share_new(void);
/* 1 while this store holds the file lock. */
int pcb_share_held(const pcb_store *s);
/* 1 if the file is the one this store last read or wrote (its identity). */
int pcb_share_file_unchanged(pcb_store *s);
/* The generation of a clear() not yet written (0: none), and putting it
 * back after a failed commit's undo (store lock held). */
uint64_t pcb_share_clear_gen(const pcb_store *s);
void pcb_share_restore_clear_gen(pcb_store *s, uint64_t gen);

/* Records a change to stored name (store lock held, before apply bumps
 * mem_gen: the change belongs to mem_gen + 1). 1, or 0 out of memory. */
int pcb_share_note(pcb_store *s, const uint8_t *sname, size_t len, uint64_t gen, pcb_status *st);
/* Records a clear() (store lock held, before mem_gen is bumped). */
void pcb_share_note_clear(pcb_store *s, uint64_t gen);
/* The generation noted for stored name, 0 if none (store lock held). */
uint64_t pcb_share_noted(const pcb_store *s, const uint8_t *sname, size_t len);
/* Puts a name's note back to prev (0: no note) after a failed commit's
 * undo (store lock held); cannot fail. */
void pcb_share_unnote(pcb_store *s, const uint8_t *sname, size_t len, uint64_t prev);
/* Forgets what the file looked like, so that the next write reads it again
 * and merges (after an undo that may have gone over merged changes). */
void pcb_share_forget_seen(pcb_store *s);
/* Records the lock file's counter and the file's identity before a load
 * reads the file. */
void pcb_share_seen(pcb_store *s);
/* Takes the file lock (io_lock held, or the load of a new store; waits at
 * most lock_timeout). 1, or 0 with st set and the lock not held. */
int pcb_share_lock(pcb_store *s, pcb_status *st);
/* With the file lock held: 1 if another writer changed the file since this
 * store last read or wrote it (the lock file's counter or the file's
 * identity differ), with what they are now in *counter and *id (taken
 * before the file is read: a later change shows next time). */
int pcb_share_changed(pcb_store *s, uint64_t *counter, pcb_file_id *id);
/* Merges: this store's noted changes put on top of fresh, the file as the
 * other writers left it, which then replaces the store's map (*replaced =
 * 1; *fresh gets the map before the merge, for the caller to keep for an
 * undo or free). While a clear() is not yet written it wins over the whole
 * file: the store's map stays (*replaced = 0, *fresh untouched: the file
 * read, for the caller to free). Either way counter and id are recorded as
 * seen. Takes the store's lock. 1, or 0 out of memory with the map
 * unchanged (*replaced = 0). */
int pcb_share_merge(pcb_store *s, pcb_map *fresh, uint64_t counter, const pcb_file_id *id,
                    int *replaced, pcb_status *st);
/* Releases the file lock if held. */
void pcb_share_unlock(pcb_store *s);
/* After this store renamed its file into place for generation gen (lock
 * held): the counter bumped, the identity recorded, changes up to gen
 * forgotten. */
void pcb_share_written(pcb_store *s, uint64_t gen);
/* In a forked child (its atfork hook), after lock.c's own child handler
 * closed the child's copies of every lock descriptor (held, or opened by a
 * parent's thread still waiting for the lock): forgets the file lock. The
 * parent's lock stays the parent's and is released by its close (an OFD or
 * flock lock lives until the last descriptor of its description closes);
 * the child takes its own lock when it writes. */
void pcb_share_after_fork_child(pcb_share *sh);
/* Frees the share (the lock is released); NULL is fine. */
void pcb_share_free(pcb_share *sh);

#endif /* PCB_STORE_MERGE_H */
