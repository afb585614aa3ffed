/* abuselib without its probe: a library the tracer reads but attaches
 * nothing in. */
void abuselib_fire(int round);

void abuselib_fire(int round)
{
    (void)round;
}
