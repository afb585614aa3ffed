/* Built with --dynamic-linker naming an ordinary program (/usr/bin/env,
 * /usr/bin/yes) instead of ld.so: the kernel execs it all the same. Held at
 * its exec, it maps only itself and that program; a tracer that ran its
 * "dynamic linker" would run that program with the process's environment. */
int main(void)
{
    return 0;
}
