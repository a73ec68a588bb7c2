/* slot_list.h - intrusive doubly linked lists of cache slots, for the
 * eviction policies: a slot is on at most one list; most recent at the
 * head. The arrays (prev, next, on: which list, 0 none) belong to the
 * policy and are shared by its lists. */
#ifndef SL_EXPERTS_SLOT_LIST_H
#define SL_EXPERTS_SLOT_LIST_H

typedef struct slot_links {
    int *prev, *next;
    unsigned char *on; /* list id of each slot, 0: on none */
} slot_links;

typedef struct slot_list {
    int head, tail; /* -1 when empty */
    int n;
    unsigned char id; /* > 0 */
} slot_list;

static inline void slot_list_init(slot_list *l, unsigned char id)
{
    l->head = l->tail = -1;
    l->n = 0;
    l->id = id;
}

/* Takes slot s off list l (it must be on it). */
static inline void slot_list_remove(slot_links *k, slot_list *l, int s)
{
    if (k->prev[s] >= 0) k->next[k->prev[s]] = k->next[s];
    else l->head = k->next[s];
    if (k->next[s] >= 0) k->prev[k->next[s]] = k->prev[s];
    else l->tail = k->prev[s];
    k->on[s] = 0;
    l->n--;
}

/* Puts slot s (on no list) at the head of l. */
static inline void slot_list_push(slot_links *k, slot_list *l, int s)
{
    k->prev[s] = -1;
    k->next[s] = l->head;
    if (l->head >= 0) k->prev[l->head] = s;
    l->head = s;
    if (l->tail < 0) l->tail = s;
    k->on[s] = l->id;
    l->n++;
}

#endif
