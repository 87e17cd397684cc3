#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hrw.h"

#define NAMES 100000

int main(void)
{
    uint64_t nodes[11];
    char id[32], key[64];
    for (int i = 0; i < 11; i++) {
        snprintf(id, sizeof(id), "t%04d", i * 7919);
        nodes[i] = hrw_hash(id, strlen(id));
    }
    int count[11] = {0};
    int moved = 0, moved_elsewhere = 0;
    for (int k = 0; k < NAMES; k++) {
        int n = snprintf(key, sizeof(key), "shoal/bucket/shard-%06d.tar", k);
        uint64_t h = hrw_hash(key, (size_t)n);
        int a = hrw_pick(h, nodes, 10);
        int b = hrw_pick(h, nodes, 11);
        count[a]++;
        if (a != b) {
            moved++;
            if (b != 10)
                moved_elsewhere++;
        }
        /* the top list starts with the winner and holds distinct nodes */
        if (k < 1000) {
            int order[3];
            CHECK(hrw_top(h, nodes, 10, order, 3) == 3);
            CHECK(order[0] == a && order[1] != a && order[2] != a && order[1] != order[2]);
        }
    }
    /* spread: every target within 5% of the mean */
    for (int i = 0; i < 10; i++)
        CHECK(count[i] > NAMES / 10 * 95 / 100 && count[i] < NAMES / 10 * 105 / 100);
    /* an 11th target takes about 1/11 of the names, and only names move to it */
    double frac = (double)moved / NAMES;
    printf("hrw: spread min..max over 10 targets, moved %.4f (ideal %.4f)\n", frac, 1.0 / 11);
    CHECK(frac > 0.08 && frac < 0.102);
    CHECK(moved_elsewhere == 0);
    CHECK(hrw_pick(1, nodes, 0) == -1);
    return check_done("test_hrw");
}
