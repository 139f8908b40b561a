/* SPDX-License-Identifier: MIT */
/* spin model of the ring's thread attribution, the owner hint (docs/ring.md §3, §5). */

/*
 * What is modelled: one ring, two writer threads T1 and T2 logging NEV1 and
 * NEV2 events, a signal handler nested in T1 (NSIG events), and a consumer
 * that may flush (close the current packet) NFLUSH times.
 *
 * Abstraction. `write` counts the records placed so far; the buffer is an
 * array of records (kind, tid). A reservation places its records at its CAS
 * (F): their contents depend only on the writer's locals at F, so placing
 * them there is the same buffer the reader sees once the commit (G)
 * publishes it. Records:
 *   THREAD(tid)  strata:thread, 2 words (format.md §4)
 *   EVENT(tid)   an event; tid is the thread that really logged it
 *   PKT(tid)     a packet opened by tid: the context names the opener
 *   PAD          the rest of the packet is padding (closed by a flush or by
 *                a writer whose event did not fit)
 * pos == 0 (ring.md §4) is "w == 0, or the record before w is PAD": a pure
 * function of w, as in the code. Whether an event fits in the packet is a
 * function of w and its length that the model leaves free: any writer may
 * find that it does not fit (NSWITCH times in all), which only adds
 * behaviours. strata:clock records and timestamps do not affect attribution
 * and are left out.
 *
 * The writer follows ring.md §2 step by step (B, C, E, F, each one atomic
 * action touching one shared variable), with the packet switch of §4 as
 * src/ring/slow.c does it (the opener stores owner = self between B and
 * its CAS when need is set, exactly like E, and writes PKT instead of
 * THREAD) and the give-up rule: after any failed CAS, or when the next
 * packet is not free (NLOSS times), a writer may drop its event; it then
 * resets owner = 0 (§3 rule 4). The handler
 * may run between any two steps of T1 (sigpoint), with nesting 2 and
 * therefore need = 1 from the start (§3 rule 3).
 *
 * Property, checked when each event is placed and again by a final pass
 * over the whole buffer with the reader's rule (format.md §4): every EVENT
 * belongs to the tid of the last THREAD or PKT record before it in its
 * packet, and that is the thread that wrote it. Plus: every event is either
 * placed or dropped, and no invalid end state (spin's default check).
 *
 * Memory model. By default the interleavings are sequentially consistent.
 * With -DTSO each thread also has an x86 store buffer for `owner`: its
 * plain stores (E, the opener's store, the reset of rule 4) enter a FIFO,
 * its own loads read the newest buffered value, the buffer drains to memory
 * at any time (process membuf), and a locked instruction (the CAS F, which
 * is `lock cmpxchg`) drains it first. `write` is only written by CAS, and on
 * x86 loads are not reordered with loads (B before C holds), so this is
 * x86-TSO for everything the protocol touches. The handler shares T1's
 * buffer (same hardware thread; not draining it at signal delivery only
 * adds behaviours).
 *
 * With -DRSEQ the writer follows ring.md §7 instead: B and C are loaded
 * before the section; R2 (write == w), R4 (the owner store, E) and R5 (the
 * commit of write) form one atomic step, since every writer of the ring runs
 * on its CPU and the kernel aborts a section that is preempted or
 * signalled; the model lets a section abort after R4 (NABORT times), which
 * leaves an owner store with no reservation, and the writer then retries
 * or gives up as after a failed CAS. One CPU is sequentially consistent for
 * its own threads, so no store buffer is needed there.
 * -DRSEQ also models the inline path of ring.md §7 (strata_log_rseq()):
 * every event first tries it, unless its thread holds the nesting guard
 * (t1_guard: T1 is inside the slow path, between its first step and its
 * commit). It loads write (B) and owner (C), then one section appends the
 * EVENT with no record if write is unchanged, owner is the writer and the
 * packet is open, or fails having stored nothing (the event would fill
 * the packet or not fit, a timestamp gap, an abort: free choice); the
 * event then goes to the slow path above. It takes no guard, so a handler
 * that interrupts it, or that runs while T1 is between events, starts at
 * nest 1 and may trust owner; only a handler that interrupts T1's slow
 * path starts at nest 2 (rule 3).
 *
 * Why SC (and the TSO variant) is sound for this property under the C11
 * orders of include/strata/inline/ring.h (acquire B, relaxed C and E,
 * acq_rel CAS F), i.e. also on weaker hardware:
 *  - `write` changes only by RMW (CAS), so its modification order is total,
 *    each CAS reads the latest value, and the buffer order is the same as in
 *    an interleaving. Every later CAS continues the release sequence of an
 *    earlier one.
 *  - The one relaxed load that matters is C reading owner == X, which makes
 *    X append with no record. Suppose another writer Y placed a record (Y
 *    stored owner = Y at E_y, sequenced after its B_y and before its
 *    release CAS F_y) between X's previous reservation R_x and X's new one.
 *    X's B (acquire) read the value its own successful CAS replaced, which
 *    is in the release sequence of F_y: F_y synchronizes with B, so E_y
 *    happens before C, and by read-write coherence C reads E_y or a store
 *    after it in owner's modification order. A store of X after E_y cannot
 *    be the one of R_x: that one is sequenced before F_x, which Y's acquire
 *    B_y saw (R_x precedes R_y), so it happens before E_y. A store of a
 *    later attempt of X that failed is followed (sequenced) by X's reset to
 *    0 (rule 4) or leaves need set (stickiness, rule 2). So C cannot read
 *    X: the C11 executions that matter are exactly those the interleavings
 *    here explore, and relaxed E/C only make the hint stale, which the
 *    model's interleavings (and store buffers) already cover.
 *
 * Variants that break one rule each, to show the checker can fail (each
 * must report an assertion violation; see run.sh):
 *   -DBROKEN_E_BEFORE_B      rule 2: store owner before loading write
 *   -DBROKEN_C_BEFORE_B      rule 1: load owner before write
 *   -DBROKEN_NOT_STICKY      rule 2: need recomputed in every iteration
 *   -DBROKEN_NO_RULE3        rule 3: the nested handler trusts owner
 *   -DBROKEN_NO_RULE4        rule 4: no reset of owner on give-up
 *   -DBROKEN_OPENER_NO_OWNER §3/§4: the packet opener leaves owner alone
 *   -DRSEQ -DBROKEN_FAST_IN_GUARD  the inline path runs inside the
 *                            nesting guard (it must refuse: ring.md §7)
 *   -DTSO -DBROKEN_RELAXED_CAS  the CAS does not order the owner store
 *                            before it (a relaxed CAS on a weak machine):
 *                            shows that the release in F is needed
 */

#define T1 1
#define T2 2

#define NONE 0	/* no thread */

mtype = { THREAD, EVENT, PKT, PAD };	/* record kinds */

#ifndef NEV1
#define NEV1 2 /* events of T1 */
#endif
#ifndef NEV2
#define NEV2 2 /* events of T2 */
#endif
#ifndef NSIG
#define NSIG 1 /* events of the handler nested in T1 */
#endif
#ifndef NFLUSH
#define NFLUSH 1 /* consumer flushes */
#endif
#ifndef NSWITCH
#define NSWITCH 1 /* "does not fit" packet switches */
#endif
#ifndef NLOSS
#define NLOSS 1 /* "next packet not free" drops */
#endif
#ifndef NABORT
#define NABORT 1 /* -DRSEQ: sections aborted after R4 */
#endif
#ifndef MAXTRY
#define MAXTRY 3 /* CAS attempts per event (64 in the code) */
#endif

/* at most PAD + PKT + EVENT per event, plus one PAD per flush */
#define NREC ((NEV1 + NEV2 + NSIG) * 3 + NFLUSH)

mtype kind[NREC];
byte rtid[NREC];
byte write;	/* ring->write: records reserved so far */
byte owner;	/* ring->owner */
byte attr;	/* the reader's "current thread" at the end of the buffer */

bit sig_go;	/* T1 -> handler: run now; T1 waits for it to clear */
bit t1_guard;	/* T1 holds the nesting guard (is in the slow path) */
byte sigs;	/* signals delivered */
byte flush_left = NFLUSH;
byte switch_left = NSWITCH;
byte loss_left = NLOSS;
byte abort_left = NABORT;
byte placed;	/* events placed */
byte dropped;	/* events given up */
byte finished;	/* writer threads done */

/* ---- the owner hint, SC or with x86 store buffers ---------------------- */

#ifdef TSO
#define SBD 3
byte sbn[3];		/* buffered stores of thread 1, 2 */
byte sbv[3 * SBD];	/* oldest first */

inline st_owner(t, v)
{
	atomic {
		sbn[t] < SBD;	/* a full store buffer stalls the store */
		sbv[t * SBD + sbn[t]] = v;
		sbn[t]++
	}
}

inline ld_owner(t, r)
{
	if
	:: sbn[t] > 0 -> r = sbv[t * SBD + sbn[t] - 1]
	:: else -> r = owner
	fi
}

inline drain_one(t)
{
	owner = sbv[t * SBD];
	sbv[t * SBD] = sbv[t * SBD + 1];
	sbv[t * SBD + 1] = sbv[t * SBD + 2];
	sbv[t * SBD + 2] = 0;
	sbn[t]--
}

inline drain(t)
{
#ifndef BROKEN_RELAXED_CAS
	do
	:: sbn[t] > 0 -> drain_one(t)
	:: else -> break
	od
#else
	skip
#endif
}

/* The buffer of thread t reaches memory whenever the hardware likes. */
proctype membuf(byte t)
{
end:
	do
	:: atomic { sbn[t] > 0 -> drain_one(t) }
	od
}
#else
inline st_owner(t, v)
{
	owner = v
}

inline ld_owner(t, r)
{
	r = owner
}

inline drain(t)
{
	skip
}
#endif

/* ---- the buffer and the reader's rule ----------------------------------- */

/* Place one record at `write`; check the attribution of events as the
 * reader will see it. */
inline place(k, t)
{
	assert(write < NREC);
	printf("buf[%d] = %e(%d)\n", write, k, t);
	kind[write] = k;
	rtid[write] = t;
	if
	:: k == THREAD || k == PKT -> attr = t
	:: k == PAD -> attr = NONE
	:: k == EVENT -> assert(attr == t); placed++
	fi;
	write++
}

/* ---- the writer (ring.md §2 fast path, §4 packet switch) ---------------- */

/* A signal for T1 may arrive here: T1 hands over to the handler and waits
 * until it returns. Only the outermost level of T1 can be interrupted. */
inline sigpoint(me, nest)
{
	if
	:: me == T1 && !inh && sig_left > 0 ->
		sig_left--;
		sigs++;
		printf("T1: signal\n");
		sig_go = 1;
		(sig_go == 0);
		printf("T1: handler returned\n")
	:: true -> skip
	fi	/* the guards read locals only: spin's partial order
		 * reduction skips the points where no signal comes */
}

/* Drop the event (retries exhausted, or next packet not free): ring.md §3
 * rule 4 says "if we stored it"; src/ring/slow.c resets whenever need is
 * set, a superset (0 is nobody's tid, so an extra reset only costs a
 * record). The model does what the code does; -DRESET_IF_STORED checks
 * the rule's minimum. */
inline give_up(me, nest)
{
	atomic {
#ifndef BROKEN_NO_RULE4
		if
#ifdef RESET_IF_STORED
		:: stored -> st_owner(me, NONE)
#else
		:: need -> st_owner(me, NONE)
#endif
		:: else -> skip
		fi;
#endif
		printf("T%d/%d: drops its event (rule 4 resets owner)\n", me, nest);
		dropped++
	}
}

/* E: if need, store_relaxed(owner, self) */
inline store_e(me, nest)
{
	if
	:: need ->
		printf("T%d/%d: E owner := %d\n", me, nest, me);
		st_owner(me, me);
		stored = 1
	:: else -> skip
	fi
}

/* The packet opener stores owner = self if it needs to, after B and
 * before its CAS, exactly as E (src/ring/slow.c passes `need ? tid : 0`). */
inline opener_owner(me, nest)
{
#ifndef BROKEN_OPENER_NO_OWNER
	if
	:: need ->
		printf("T%d/%d: opener owner := %d\n", me, nest, me);
		st_owner(me, me);
		stored = 1
	:: else -> skip
	fi
#else
	skip
#endif
}

/* A successful fast-path reservation: [THREAD] EVENT */
inline append(me)
{
	if
	:: need -> place(THREAD, me)
	:: else -> skip
	fi;
	place(EVENT, me)
}

/* A successful packet switch: [PAD] PKT EVENT; the opener writes no THREAD
 * record, the packet context names it */
inline open_packet(me)
{
	if
	:: !pos0 -> place(PAD, NONE); switch_left--
	:: else -> skip
	fi;
	place(PKT, me);
	place(EVENT, me)
}

inline rseq_abort(me, nest)
{
	printf("T%d/%d: section aborted after the owner store\n", me, nest);
	abort_left--;
	ok = 0
}

/* Log one event as thread `me` at nesting level `nest`. Locals of the
 * calling proctype: w, ow, tries, need, stored, ok, pos0, opening. */
inline log_event(me, nest)
{
	need = (nest > 1);	/* A, rule 3 */
#ifdef BROKEN_NO_RULE3
	need = 0;
#endif
	stored = 0;
	tries = 0;
	do
	:: true ->
		sigpoint(me, nest);
#ifdef BROKEN_E_BEFORE_B
		atomic { ld_owner(me, ow); need = need || (ow != me) };
		if
		:: need ->
			printf("T%d/%d: early E owner := %d\n", me, nest, me);
			st_owner(me, me);
			stored = 1
		:: else -> skip
		fi;
		sigpoint(me, nest);
#endif
#ifdef BROKEN_C_BEFORE_B
		atomic {
			ld_owner(me, ow);
			need = need || (ow != me);
			printf("T%d/%d: early C owner = %d, need = %d\n", me, nest, ow, need)
		};
		sigpoint(me, nest);
#endif
		/* B: w = load_acquire(write); pos is a function of w */
		atomic {
			w = write;
			if
			:: w == 0 -> pos0 = 1
			:: else -> pos0 = (kind[w - 1] == PAD)
			fi;
			/* pos == 0: open the next packet; or the event does
			 * not fit: close this one, open the next (§4) */
			if
			:: pos0 -> opening = 1
			:: !pos0 && switch_left > 0 -> opening = 1
			:: !pos0 -> opening = 0
			fi
		};
		sigpoint(me, nest);
#ifndef BROKEN_C_BEFORE_B
		/* C: need |= load_relaxed(owner) != self (sticky) */
		atomic {
			ld_owner(me, ow);
#ifdef BROKEN_NOT_STICKY
			need = (nest > 1) || (ow != me);
#else
			need = need || (ow != me);
#endif
			printf("T%d/%d: B w = %d, C owner = %d, need = %d\n", me, nest, w, ow, need)
		};
		sigpoint(me, nest);
#endif
		if
		:: opening ->
			/* the slot of `begin` may not be free: drop */
			atomic {
				if
				:: loss_left > 0 ->
					loss_left--;
					give_up(me, nest);
					ok = 0
				:: true ->
#ifndef RSEQ
					opener_owner(me, nest);
#endif
					ok = 1
				fi
			};
			if
			:: !ok -> break
			:: else -> skip
			fi;
#ifdef RSEQ
			/* R2-R5 (§7): one rseq section, atomic against the
			 * ring's other writers (all on its CPU); the kernel
			 * may abort it after the owner store */
			atomic {
				if
				:: write == w ->
					opener_owner(me, nest);
					if
					:: true -> open_packet(me); ok = 1
					:: abort_left > 0 -> rseq_abort(me, nest)
					fi
				:: else ->
					printf("T%d/%d: section stale\n", me, nest);
					ok = 0
				fi
			}
#else
			sigpoint(me, nest);
			/* CAS(write, w, begin + header + event); the opener
			 * writes no THREAD record: the packet context names it */
			atomic {
				drain(me);
				if
				:: write == w -> open_packet(me); ok = 1
				:: else ->
					printf("T%d/%d: CAS fails\n", me, nest);
					ok = 0
				fi
			}
#endif
		:: else ->
#ifdef RSEQ
			/* R2-R5 (§7): R4 is E, R5 the commit of `write` */
			atomic {
				if
				:: write == w ->
					store_e(me, nest);
					if
					:: true -> append(me); ok = 1
					:: abort_left > 0 -> rseq_abort(me, nest)
					fi
				:: else ->
					printf("T%d/%d: section stale\n", me, nest);
					ok = 0
				fi
			}
#else
#ifndef BROKEN_E_BEFORE_B
			store_e(me, nest);	/* E */
			sigpoint(me, nest);
#endif
			/* F: CAS_acq_rel(write, w, w + len); a locked
			 * instruction drains the store buffer first */
			atomic {
				drain(me);
				if
				:: write == w -> append(me); ok = 1
				:: else ->
					printf("T%d/%d: CAS fails\n", me, nest);
					ok = 0
				fi
			}
#endif
		fi;
		if
		:: ok -> break
		:: else ->
			tries++;
			if
			:: tries < MAXTRY -> skip	/* retry */
			:: true -> give_up(me, nest); break	/* give up */
			fi
		fi
	od;
	/* dead locals back to 0, so that they do not split states */
	atomic {
		w = 0;
		ow = 0;
		tries = 0;
		need = 0;
		stored = 0;
		ok = 0;
		pos0 = 0;
		opening = 0
	};
	sigpoint(me, nest)	/* between F and G, or after a drop */
}

/* The inline path of ring.md §7 (-DRSEQ): B, C, then one section that
 * appends the event with no record, or fails having stored nothing. */
inline fast_event(me, nest)
{
	ok = 0;
	if
#ifdef BROKEN_FAST_IN_GUARD
	:: true ->
#else
	:: me == T2 || !t1_guard ->
#endif
		atomic {
			w = write;
			if
			:: w == 0 -> pos0 = 1
			:: else -> pos0 = (kind[w - 1] == PAD)
			fi
		};
		sigpoint(me, nest);
		atomic { ld_owner(me, ow) };
		sigpoint(me, nest);
		atomic {
			if
			:: write == w && ow == me && !pos0 ->
				printf("T%d: inline path\n", me);
				place(EVENT, me);
				ok = 1
			:: true -> skip	/* fills, does not fit, gap, abort */
			fi
		}
	:: else -> skip
	fi;
	atomic { w = 0; ow = 0; pos0 = 0 }
}

/* One event from the top of a tracepoint: the inline path first (-DRSEQ),
 * else the slow path, holding the nesting guard. The handler's slow path
 * is nested (rule 3) only when T1 holds its guard. */
inline log_top(me)
{
#ifdef RSEQ
	fast_event(me, 1);
	if
	:: ok -> ok = 0
	:: else ->
		if
		:: inh && t1_guard -> log_event(me, 2)
		:: inh && !t1_guard -> log_event(me, 1)
		:: !inh && me == T1 -> t1_guard = 1; log_event(me, 1); t1_guard = 0
		:: !inh && me == T2 -> log_event(me, 1)
		fi
	fi
#else
	if
	:: inh -> log_event(me, 2)
	:: else -> log_event(me, 1)
	fi
#endif
}

proctype writer(byte me; byte nev; byte sig_left)
{
	byte w, ow, tries, e;
	bit need, stored, ok, pos0, opening;
	bit inh = 0;

	do
	:: e < nev -> log_top(me); e++
	:: else -> break
	od;
	finished++
}

/* The signal handler of T1: runs only while T1 waits for it in sigpoint. */
proctype handler()
{
	byte w, ow, tries, sig_left;
	bit need, stored, ok, pos0, opening;
	bit inh = 1;

end:
	do
	:: sig_go == 1 -> log_top(T1); sig_go = 0
	od
}

/* The consumer's flush (ring.md §4): a reservation with no event that
 * closes the current packet, if one is open. It does not touch owner. Its
 * load of write and its CAS have nothing in between that matters, so they
 * are one atomic step here. */
proctype flusher()
{
end:
	do
	:: flush_left > 0 ->
		atomic {
			flush_left--;
			if
			:: write > 0 ->
				if
				:: kind[write - 1] != PAD -> place(PAD, NONE)
				:: else -> skip
				fi
			:: else -> skip
			fi
		}
	od
}

init
{
	byte k, cur;

	atomic {
		run writer(T1, NEV1, NSIG);
		run writer(T2, NEV2, 0);
		run handler();
		run flusher();
#ifdef TSO
		run membuf(T1);
		run membuf(T2);
#endif
	}
	(finished == 2);

	/* every event logged was placed or dropped */
	assert(placed + dropped == NEV1 + NEV2 + sigs);

	/* the reader's rule over the whole buffer (format.md §4) */
	k = 0;
	cur = NONE;
	do
	:: k < write ->
		if
		:: kind[k] == THREAD || kind[k] == PKT -> cur = rtid[k]
		:: kind[k] == PAD -> cur = NONE
		:: kind[k] == EVENT -> assert(cur == rtid[k])
		fi;
		k++
	:: else -> break
	od
}
