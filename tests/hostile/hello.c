/* tests/hostile/hello.c: an ordinary C program: echoes its arguments and exits with argv[1]. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        printf("%s%s", argv[i], i + 1 < argc ? " " : "\n");
    return argc > 1 ? atoi(argv[1]) : 0;
}
