/* tests/hostile/euid.c: prints its effective uid; installed setuid-root by a test to show that a
 * setuid binary gains nothing inside a sandbox. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    printf("RESULT euid %d\nRESULT uid %d\n", geteuid(), getuid());
    return 0;
}
