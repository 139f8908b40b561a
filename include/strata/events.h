/* SPDX-License-Identifier: MIT */
/* Event descriptors: what the metadata writer needs to describe an event. */
#ifndef STRATA_EVENTS_H
#define STRATA_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef STRATA_API
#define STRATA_API __attribute__((visibility("default")))
#endif

/* Field types (docs/format.md §3). Arrays are a scalar integer type with
 * count > 0. */
enum strata_type {
	STRATA_T_U8 = 1,
	STRATA_T_U16,
	STRATA_T_U32,
	STRATA_T_U64,
	STRATA_T_S8,
	STRATA_T_S16,
	STRATA_T_S32,
	STRATA_T_S64,
	STRATA_T_F64,
	STRATA_T_BOOL,
	STRATA_T_PTR,    /* u64 shown in hex */
	STRATA_T_STRING, /* u32 byte count + bytes incl. NUL and padding */
};

struct strata_field_desc {
	const char *name;
	uint16_t type;  /* enum strata_type */
	uint16_t count; /* 0: scalar; N: fixed array of N elements */
	uint32_t flags; /* STRATA_F_*: how tools show and use the field */
};

#define STRATA_F_HEX 0x1u
/* The key of a message flow (docs/dsl.md, "Flows"): an event with a field
 * so marked sends a message that the event of the same key marked
 * STRATA_F_FLOW_RECEIVE (the next one in time) receives. One field of an
 * event at most, an integer or ptr scalar; never on a BEGIN or END event. */
#define STRATA_F_FLOW_SEND 0x2u
#define STRATA_F_FLOW_RECEIVE 0x4u

/* Event kinds, for tools that pair events (intervals). */
enum strata_event_kind {
	STRATA_EV_POINT = 0,
	STRATA_EV_BEGIN = 1, /* opens an interval closed by the matching END */
	STRATA_EV_END = 2,
};

struct strata_event_desc {
	const char *subsystem; /* "mem" */
	const char *name;      /* "alloc"; the full name is "mem:alloc" */
	uint8_t major;         /* 1..62 */
	uint8_t kind;          /* enum strata_event_kind */
	uint16_t minor;
	uint16_t nfields;
	uint16_t reserved;
	const struct strata_field_desc *fields;
	const char *format;      /* "alloc %{size} bytes at %{addr:x}", or NULL */
	const char *description; /* free text, or NULL */
	/* Per-event enable flag, owned by the generated code (NULL for events
	 * that are controlled by their major bit only). 1 = enabled, 0 =
	 * disabled, STRATA_FLAG_START/STOP = an armed trigger. */
	volatile uint8_t *enabled;
};

struct strata_subsys_desc {
	const char *name; /* "mem" */
	uint8_t major;
	const char *description;
};

/*
 * Register descriptors so that the metadata of every trace this process
 * writes describes these events. The arrays must stay valid until exit
 * (generated code passes static tables). May be called at any time, from
 * any thread, including before strata_start(); not from signal handlers.
 * Registering the same (major, minor) twice with a different layout keeps
 * the first and returns -EEXIST.
 * Returns 0, -EEXIST, or -ENOMEM.
 */
STRATA_API int strata_register(const struct strata_subsys_desc *subsys,
			       const struct strata_event_desc *const *events,
			       size_t nevents);

/* Look up a registered event by id; NULL if unknown. */
STRATA_API const struct strata_event_desc *strata_event_lookup(uint8_t major,
							       uint16_t minor);

/*
 * Enable or disable events by name at run time. `pattern` is a glob on
 * "subsystem:event" ("mem:*", "*:alloc"), or a bare subsystem name ("mem")
 * which flips the subsystem's major bit. Per-event flags are only
 * consulted by events that have one, so events without a flag cost
 * nothing more. Returns the number of events or subsystems matched, or
 * -EINVAL.
 */
STRATA_API int strata_enable(const char *pattern);
STRATA_API int strata_disable(const char *pattern);

/*
 * Start and stop triggers (STRATA_START_ON / STRATA_STOP_ON, docs/record.md):
 * a per-event flag that is not 1 makes the generated code call
 * strata_event_fire(), which returns whether to log the event (an armed
 * trigger fires, and is logged).
 */
#define STRATA_FLAG_START 2
#define STRATA_FLAG_STOP 3
STRATA_API int strata_event_fire(volatile uint8_t *flag);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_EVENTS_H */
